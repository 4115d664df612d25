// The codebook tower (MODEL.md §3, "codebook-MTP"): 4 shared layers then 9 per-codebook layers, each
//   h = out_norm(Block(eh_proj([enorm(E[code]); hnorm(h_in)])))   Block = attention (own KV cache) + SwiGLU MLP,
// with zero-centred norms and interleaved partial RoPE. Shared layers embed code[0] (layer 0 reads the backbone's
// final-norm row, the others the previous output); per-codebook layer k embeds code[k] and its head gives the logits
// of code[k+1]. Tower row t reads backbone row t with the codes of the frame at row t+1; a code of −1 is masked (a zero
// embedding). Codes come from frame records [T, 1 + K] (token, code[0..K−1]) in a backend buffer; when the tower draws
// (a frame step), each head's logits go to the backend's sampler, which writes code[k + 1] into the records before
// layer k + 1 reads it, so no code leaves the backend. Shapes: T rows, d tower hidden, D text hidden, K codebooks.
import type {
  AttentionWeights,
  Backend,
  CallTables,
  KeyValueSlab,
  LinearWeight,
  SamplerState,
  SwiGluWeights,
  Tensor,
} from '../backend/types.ts';
import { BufferPool } from './buffer-pool.ts';
import type { AudioConfig, Drama3Config, TextConfig, TowerConfig } from './config.ts';
import { codebookEmbeddingRow } from './config.ts';
import { loadAttention } from './layers/attention.ts';
import type { WeightSource } from './tensor-source.ts';
import { type TowerLayerNames, towerNames } from './weights.ts';

export interface TowerLayer<B> {
  /** Width of h_in: the text hidden size for the first layer, else d. */
  readonly inputWidth: number;
  /** The codebook whose code this layer embeds. */
  readonly codebook: number;
  readonly enorm: Tensor<B>;
  readonly hnorm: Tensor<B>;
  readonly ehProj: LinearWeight<B>;
  readonly inputNorm: Tensor<B>;
  readonly attention: AttentionWeights<B>;
  readonly postNorm: Tensor<B>;
  readonly mlp: SwiGluWeights<B>;
  readonly outNorm: Tensor<B>;
  /** Per-codebook layers: logits of code[codebook + 1], [codebook size, d]. */
  readonly head: LinearWeight<B> | undefined;
}

/** A frame step's drawing: the sampler's lane table and RAS slab, over `batch` lanes. */
export interface TowerDraw<B> {
  readonly sampler: SamplerState<B>;
  readonly batch: number;
}

/**
 * Layers [from, to) of the tower, with the buffers of one part of a step: a frame step's head and its tail run beside
 * each other on a backend that queues work (speech-model.ts), so each part has buffers of its own.
 */
export interface TowerPart {
  readonly from: number;
  readonly to: number;
  readonly buffers: 'head' | 'tail';
}

/**
 * Elements of a step tail's input row: the backbone's hidden row where the next step embeds code[0] (the sampler's,
 * so the whole tower is the tail; Tower.tailFrom), else a tower row.
 */
export function tailInputWidth(config: Pick<Drama3Config, 'audio' | 'text' | 'tower'>): number {
  return config.audio.frameEmbeddingCodebook === 0 ? config.text.hiddenSize : config.tower.hiddenSize;
}

export class Tower<B> {
  private readonly pools: Record<TowerPart['buffers'], BufferPool<B>>;

  constructor(
    readonly backend: Backend<B>,
    readonly config: TowerConfig,
    readonly audio: AudioConfig,
    readonly layers: readonly TowerLayer<B>[],
    /** [semantic + residual rows, d] */
    readonly codeEmbeddings: Tensor<B>,
  ) {
    this.pools = { head: new BufferPool(backend), tail: new BufferPool(backend) };
  }

  /**
   * The first layer whose draw the next frame step does not read: it embeds code[codebook] of this frame, drawn by
   * the layer before (code[0] is the sampler's, so with codebook 0 every layer can run in the tail).
   */
  tailFrom(codebook: number): number {
    if (codebook === 0) return 0;
    const drawing = this.layers.findIndex((layer) => layer.head !== undefined && layer.codebook + 1 === codebook);
    return drawing < 0 ? this.layers.length : drawing + 1;
  }

  static async load<B>(
    source: WeightSource<B>,
    config: TowerConfig,
    audio: AudioConfig,
    text: TextConfig,
  ): Promise<Tower<B>> {
    const names = towerNames();
    const layers: TowerLayer<B>[] = [];
    const add = async (layerNames: TowerLayerNames, codebook: number) => {
      const inputWidth = layers.length === 0 ? text.hiddenSize : config.hiddenSize;
      layers.push({
        inputWidth,
        codebook,
        enorm: await source.tensor(layerNames.enorm),
        hnorm: await source.tensor(layerNames.hnorm),
        ehProj: await source.linear(layerNames.ehProj),
        inputNorm: await source.tensor(layerNames.inputLayernorm),
        attention: await loadAttention(source, layerNames.selfAttention, {
          heads: config.attentionHeads,
          keyValueHeads: config.keyValueHeads,
          headDim: config.headDim,
          rotaryDim: config.rotaryDim,
          ropeTheta: config.ropeTheta,
          ropeStyle: config.ropeStyle,
          outputGate: false,
          eps: config.rmsNormEps,
        }),
        postNorm: await source.tensor(layerNames.postAttentionLayernorm),
        mlp: await source.swiGlu(layerNames.mlp),
        outNorm: await source.tensor(layerNames.outNorm),
        head: layerNames.head === undefined ? undefined : await source.linear(layerNames.head),
      });
    };
    for (let layer = 0; layer < config.sharedLayers; layer++) await add(names.sharedLayer(layer), 0);
    for (let layer = 0; layer < config.codebookLayers; layer++) await add(names.codebookLayer(layer), layer);
    const codeEmbeddings = await source.tensor(names.codebookEmbeddings);
    return new Tower(source.backend, config, audio, layers, codeEmbeddings);
  }

  /** Where layer `index` leaves its `rows` output rows in a part's buffers (layers take turns between two). */
  output(index: number, rows: number, buffers: TowerPart['buffers']): B {
    return this.pools[buffers].get(index % 2 === 0 ? 'outputEven' : 'outputOdd', rows * this.config.hiddenSize);
  }

  /** K/V slabs for `slots` lanes of `rowsPerSlot` rows, one per layer: bf16 [S, R, Hkv, D]. */
  allocateSlabs(slots: number, rowsPerSlot: number): KeyValueSlab<B>[] {
    const { backend, config } = this;
    const shape = [slots, rowsPerSlot, config.keyValueHeads, config.headDim];
    return this.layers.map(() => ({ keys: backend.allocate('bf16', shape), values: backend.allocate('bf16', shape) }));
  }

  /**
   * Runs `rows` tower rows at the call tables' slots and positions: backbone rows `hidden` [T, D] with the codes of
   * `records` [T, 1 + K] (−1 masked). With `draw` (a frame step), each per-codebook layer's head is sampled into
   * records[b][1 + codebook + 1] before the next layer reads it. `part` runs layers [from, to) only (`hidden` is then
   * the output of layer from − 1, or the backbone's rows when from is 0); a layer's output is at output(index).
   */
  run(
    slabs: readonly KeyValueSlab<B>[],
    tables: CallTables<B>,
    hidden: B,
    records: Tensor<B>,
    rows: number,
    draw?: TowerDraw<B>,
    part: TowerPart = { from: 0, to: this.layers.length, buffers: 'head' },
  ): void {
    const { backend, audio } = this;
    const pool = this.pools[part.buffers];
    const d = this.config.hiddenSize;
    const eps = this.config.rmsNormEps;
    let input = hidden;
    for (let index = part.from; index < part.to; index++) {
      const layer = this.layers[index]!;
      const joined = pool.get('joined', rows * (d + layer.inputWidth));
      const towerInput = {
        codeTable: this.codeEmbeddings,
        records,
        codebook: layer.codebook,
        codeFirstRow: codebookEmbeddingRow(audio, layer.codebook, 0),
        codeNorm: layer.enorm,
        input,
        inputCols: layer.inputWidth,
        inputNorm: layer.hnorm,
        eps,
      };
      backend.towerInput(towerInput, joined, rows);
      const x = pool.get('stream', rows * d);
      backend.linear(joined, layer.ehProj, x, rows);
      const normed = pool.get('normed', rows * d);
      const branch = pool.get('branch', rows * d);
      backend.zeroCentredRmsNorm(x, layer.inputNorm, normed, rows, d, eps);
      backend.attention(layer.attention, normed, slabs[index]!, tables, branch, rows);
      backend.addZeroCentredRmsNorm(x, branch, layer.postNorm, normed, rows, d, eps);
      backend.swiGlu(layer.mlp, normed, branch, rows);
      const output = this.output(index, rows, part.buffers);
      backend.addZeroCentredRmsNorm(x, branch, layer.outNorm, output, rows, d, eps);
      input = output;
      if (draw !== undefined && layer.head !== undefined) {
        const logits = pool.get('logits', rows * audio.codebookSize, 'f32');
        backend.linear(output, layer.head, logits, rows, 'f32');
        backend.sampleCode(logits, audio.codebookSize, layer.codebook + 1, draw.sampler, records, draw.batch);
      }
    }
  }
}
