// The codebook tower (MODEL.md §3, "codebook-MTP"): 4 shared layers then 9 per-codebook layers, each
//   h = out_norm(Block(eh_proj([enorm(E[code]); hnorm(h_in)])))   Block = attention (own KV cache) + SwiGLU MLP,
// with zero-centred norms and interleaved partial RoPE. Shared layers embed code[0] (layer 0 reads the backbone's
// final-norm row, the others the previous output); per-codebook layer k embeds code[k] and its head gives the logits
// of code[k+1]. Tower row t reads backbone row t with the codes of the frame at row t+1; a code of −1 is masked (a zero
// embedding). Shapes: T rows, d tower hidden, D text hidden, K codebooks.
import type { AttentionWeights, Backend, KeyValueCache, LinearWeight, SwiGluWeights } from '../backend/types.ts';
import { BufferPool } from './buffer-pool.ts';
import type { AudioConfig, TextConfig, TowerConfig } from './config.ts';
import { codebookEmbeddingRow } from './config.ts';
import { loadAttention } from './layers/attention.ts';
import type { TensorSource } from './tensor-source.ts';
import { type TowerLayerNames, towerNames } from './weights.ts';

export interface TowerLayer<B> {
  /** Width of h_in: the text hidden size for the first layer, else d. */
  readonly inputWidth: number;
  /** The codebook whose code this layer embeds. */
  readonly codebook: number;
  readonly enorm: B;
  readonly hnorm: B;
  readonly ehProj: LinearWeight<B>;
  readonly inputNorm: B;
  readonly attention: AttentionWeights<B>;
  readonly postNorm: B;
  readonly mlp: SwiGluWeights<B>;
  readonly outNorm: B;
  /** Per-codebook layers: logits of code[codebook + 1], [codebook size, d]. */
  readonly head: LinearWeight<B> | undefined;
}

/** Picks code[column] of a frame from its logits (count entries); the tower calls it between layers. */
export type CodeDrawer<B> = (logits: B, count: number, column: number) => number;

export class Tower<B> {
  private readonly pool: BufferPool<B>;

  constructor(
    readonly backend: Backend<B>,
    readonly config: TowerConfig,
    readonly audio: AudioConfig,
    readonly layers: readonly TowerLayer<B>[],
    /** [semantic + residual rows, d] */
    readonly codeEmbeddings: B,
  ) {
    this.pool = new BufferPool(backend);
  }

  static async load<B>(
    source: TensorSource<B>,
    config: TowerConfig,
    audio: AudioConfig,
    text: TextConfig,
  ): Promise<Tower<B>> {
    const names = towerNames();
    const d = config.hiddenSize;
    const layers: TowerLayer<B>[] = [];
    const add = async (layerNames: TowerLayerNames, codebook: number) => {
      const inputWidth = layers.length === 0 ? text.hiddenSize : d;
      layers.push({
        inputWidth,
        codebook,
        enorm: await source.vector(layerNames.enorm, [d]),
        hnorm: await source.vector(layerNames.hnorm, [inputWidth]),
        ehProj: await source.linear(layerNames.ehProj, d, d + inputWidth),
        inputNorm: await source.vector(layerNames.inputLayernorm, [d]),
        attention: await loadAttention(source, layerNames.selfAttention, {
          hidden: d,
          heads: config.attentionHeads,
          keyValueHeads: config.keyValueHeads,
          headDim: config.headDim,
          rotaryDim: config.rotaryDim,
          ropeTheta: config.ropeTheta,
          ropeStyle: config.ropeStyle,
          outputGate: false,
          eps: config.rmsNormEps,
        }),
        postNorm: await source.vector(layerNames.postAttentionLayernorm, [d]),
        mlp: await source.swiGlu(layerNames.mlp, config.intermediate, d),
        outNorm: await source.vector(layerNames.outNorm, [d]),
        head: layerNames.head === undefined ? undefined : await source.linear(layerNames.head, audio.codebookSize, d),
      });
    };
    for (let layer = 0; layer < config.sharedLayers; layer++) await add(names.sharedLayer(layer), 0);
    for (let layer = 0; layer < config.codebookLayers; layer++) await add(names.codebookLayer(layer), layer);
    const codeEmbeddings = await source.vector(names.codebookEmbeddings, [audio.codebookEmbeddingRows, d]);
    return new Tower(source.backend, config, audio, layers, codeEmbeddings);
  }

  newCaches(): KeyValueCache<B>[] {
    const width = this.config.keyValueHeads * this.config.headDim;
    return this.layers.map(() => ({
      keys: this.backend.allocate(16 * width),
      values: this.backend.allocate(16 * width),
      length: 0,
      capacity: 16,
    }));
  }

  /**
   * Runs `rows` tower rows: backbone rows `hidden` [T, D] with the frame codes `codes` [T, K] (−1 masked). When
   * `drawCode` is given (one row: a frame being generated), each per-codebook layer's head is evaluated and the drawn
   * code is written into codes[codebook + 1] before the next layer runs.
   */
  run(caches: KeyValueCache<B>[], hidden: B, codes: Int32Array, rows: number, drawCode?: CodeDrawer<B>): void {
    const { backend, audio } = this;
    const d = this.config.hiddenSize;
    const eps = this.config.rmsNormEps;
    const codebooks = audio.codebooks;
    let input = hidden;
    this.layers.forEach((layer, index) => {
      const embedded = this.pool.get('embedded', rows * d);
      for (let t = 0; t < rows; t++) {
        const code = codes[t * codebooks + layer.codebook]!;
        if (code < 0) backend.copy(this.pool.get('zeros', d), backend.view(embedded, t * d, d), d);
        else
          backend.copy(
            backend.view(this.codeEmbeddings, codebookEmbeddingRow(audio, layer.codebook, code) * d, d),
            backend.view(embedded, t * d, d),
            d,
          );
      }
      const normedCode = this.pool.get('normedCode', rows * d);
      const normedInput = this.pool.get('normedInput', rows * layer.inputWidth);
      backend.zeroCentredRmsNorm(embedded, layer.enorm, normedCode, rows, d, eps);
      backend.zeroCentredRmsNorm(input, layer.hnorm, normedInput, rows, layer.inputWidth, eps);
      const joined = this.pool.get('joined', rows * (d + layer.inputWidth));
      backend.concatenateColumns(normedCode, d, normedInput, layer.inputWidth, joined, rows);
      const x = this.pool.get('stream', rows * d);
      backend.linear(joined, layer.ehProj, x, rows);
      const normed = this.pool.get('normed', rows * d);
      const branch = this.pool.get('branch', rows * d);
      backend.zeroCentredRmsNorm(x, layer.inputNorm, normed, rows, d, eps);
      backend.attention(layer.attention, normed, caches[index]!, branch, rows);
      backend.add(x, branch, rows * d);
      backend.zeroCentredRmsNorm(x, layer.postNorm, normed, rows, d, eps);
      backend.swiGlu(layer.mlp, normed, branch, rows);
      backend.add(x, branch, rows * d);
      const output = this.pool.get(index % 2 === 0 ? 'outputEven' : 'outputOdd', rows * d);
      backend.zeroCentredRmsNorm(x, layer.outNorm, output, rows, d, eps);
      input = output;
      if (drawCode !== undefined && layer.head !== undefined) {
        const logits = this.pool.get('logits', audio.codebookSize);
        backend.linear(output, layer.head, logits, 1);
        codes[layer.codebook + 1] = drawCode(logits, audio.codebookSize, layer.codebook + 1);
      }
    });
  }
}
