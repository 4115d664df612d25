// The Qwen3.5-MoE hybrid backbone (MODEL.md §2): embeddings, 3 Gated DeltaNet : 1 gated attention layers each with a
// sparse MoE, zero-centred RMSNorms, the final norm, and logits over the candidate ids only (the lm_head rows of the
// 4096 semantic ids + <|im_end|>, sliced once at load). Shapes: T rows, H hidden, N candidates.
//   layer: x += mixer(input_layernorm(x)); x += moe(post_attention_layernorm(x))
import type {
  AttentionWeights,
  Backend,
  DeltaNetState,
  DeltaNetWeights,
  KeyValueCache,
  LinearWeight,
  MoeWeights,
} from '../backend/types.ts';
import { BufferPool } from './buffer-pool.ts';
import type { LayerType, TextConfig } from './config.ts';
import { loadAttention } from './layers/attention.ts';
import { loadDeltaNet } from './layers/delta-net.ts';
import { loadMoe } from './layers/moe.ts';
import type { TensorSource } from './tensor-source.ts';
import { backboneNames } from './weights.ts';

export interface BackboneLayer<B> {
  readonly type: LayerType;
  readonly inputNorm: B;
  readonly postNorm: B;
  readonly attention: AttentionWeights<B> | undefined;
  readonly deltaNet: DeltaNetWeights<B> | undefined;
  readonly moe: MoeWeights<B>;
}

/** One sequence's backbone state: a KV cache per attention layer, conv + recurrent state per DeltaNet layer. */
export interface BackboneState<B> {
  readonly caches: (KeyValueCache<B> | undefined)[];
  readonly deltaStates: (DeltaNetState<B> | undefined)[];
  /** Rows consumed. */
  position: number;
}

/** Called after each layer with the residual stream [T, H] (for layer-by-layer comparison with a reference). */
export type LayerObserver<B> = (layer: number, hidden: B) => void;

export class Backbone<B> {
  private readonly pool: BufferPool<B>;

  constructor(
    readonly backend: Backend<B>,
    readonly text: TextConfig,
    readonly layers: readonly BackboneLayer<B>[],
    /** [V, H] */
    readonly tokenEmbeddings: B,
    readonly finalNorm: B,
    /** The lm_head rows of the candidate ids: [N, H]. */
    readonly candidateHead: LinearWeight<B>,
  ) {
    this.pool = new BufferPool(backend);
  }

  /** Loads every backbone tensor under `prefix`; `candidates` are the vocabulary ids whose logits are computed. */
  static async load<B>(
    source: TensorSource<B>,
    text: TextConfig,
    prefix: string,
    candidates: Int32Array,
  ): Promise<Backbone<B>> {
    const names = backboneNames(prefix);
    const hidden = text.hiddenSize;
    const layers: BackboneLayer<B>[] = [];
    for (let layer = 0; layer < text.layers; layer++) {
      const layerNames = names.layer(layer);
      const type = text.layerTypes[layer]!;
      layers.push({
        type,
        inputNorm: await source.vector(layerNames.inputLayernorm, [hidden]),
        postNorm: await source.vector(layerNames.postAttentionLayernorm, [hidden]),
        attention:
          type === 'full_attention'
            ? await loadAttention(source, layerNames.selfAttention, {
                hidden,
                heads: text.attentionHeads,
                keyValueHeads: text.keyValueHeads,
                headDim: text.headDim,
                rotaryDim: text.rotaryDim,
                ropeTheta: text.ropeTheta,
                ropeStyle: 'neox',
                outputGate: true,
                eps: text.rmsNormEps,
              })
            : undefined,
        deltaNet:
          type === 'linear_attention' ? await loadDeltaNet(source, layerNames.linearAttention, text) : undefined,
        moe: await loadMoe(source, layerNames.mlp, text),
      });
    }
    const embeddings = await source.float32(names.embedTokens, [text.vocabSize, hidden]);
    const head = text.tieWordEmbeddings ? embeddings : await source.float32(names.lmHead, [text.vocabSize, hidden]);
    const candidateRows = new Float32Array(candidates.length * hidden);
    candidates.forEach((id, row) => {
      candidateRows.set(head.subarray(id * hidden, (id + 1) * hidden), row * hidden);
    });
    return new Backbone(
      source.backend,
      text,
      layers,
      source.backend.fromHost(embeddings),
      await source.vector(names.norm, [hidden]),
      source.denseFrom(candidateRows, candidates.length, hidden),
    );
  }

  newState(): BackboneState<B> {
    const { backend, text } = this;
    const kvWidth = text.keyValueHeads * text.headDim;
    const convWidth = (text.linearConvKernel - 1) * text.linearConvChannels;
    const recurrentWidth = text.linearValueHeads * text.linearKeyHeadDim * text.linearValueHeadDim;
    return {
      caches: this.layers.map((layer) =>
        layer.type === 'full_attention'
          ? { keys: backend.allocate(16 * kvWidth), values: backend.allocate(16 * kvWidth), length: 0, capacity: 16 }
          : undefined,
      ),
      deltaStates: this.layers.map((layer) =>
        layer.type === 'linear_attention'
          ? { conv: backend.allocate(convWidth), recurrent: backend.allocate(recurrentWidth) }
          : undefined,
      ),
      position: 0,
    };
  }

  /**
   * Runs `rows` input rows x [T, H] (the residual stream, overwritten) through every layer at the state's position
   * and writes the final-norm rows into `normed` [T, H].
   */
  forward(state: BackboneState<B>, x: B, rows: number, normed: B, observe?: LayerObserver<B>): void {
    const { backend } = this;
    const hidden = this.text.hiddenSize;
    const eps = this.text.rmsNormEps;
    const count = rows * hidden;
    const layerInput = this.pool.get('layerInput', count);
    const layerOutput = this.pool.get('layerOutput', count);
    this.layers.forEach((layer, index) => {
      backend.zeroCentredRmsNorm(x, layer.inputNorm, layerInput, rows, hidden, eps);
      if (layer.attention !== undefined)
        backend.attention(layer.attention, layerInput, state.caches[index]!, layerOutput, rows);
      else backend.deltaNet(layer.deltaNet!, layerInput, state.deltaStates[index]!, layerOutput, rows);
      backend.add(x, layerOutput, count);
      backend.zeroCentredRmsNorm(x, layer.postNorm, layerInput, rows, hidden, eps);
      backend.moe(layer.moe, layerInput, layerOutput, rows);
      backend.add(x, layerOutput, count);
      observe?.(index, x);
    });
    backend.zeroCentredRmsNorm(x, this.finalNorm, normed, rows, hidden, eps);
    state.position += rows;
  }

  /** Logits of the candidate ids for `rows` final-norm rows: [T, N]. */
  candidateLogits(normed: B, rows: number, out: B): void {
    this.backend.linear(normed, this.candidateHead, out, rows);
  }
}
