// The Qwen3.5-MoE hybrid backbone (MODEL.md §2): embeddings, 3 Gated DeltaNet : 1 gated attention layers each with a
// sparse MoE, zero-centred RMSNorms, the final norm, and logits over the candidate ids only (the lm_head rows of the
// 4096 semantic ids + <|im_end|>, sliced once at load). Shapes: T rows, H hidden, N candidates.
//   layer: x += mixer(input_layernorm(x)); x += moe(post_attention_layernorm(x))
import type {
  AttentionWeights,
  Backend,
  CallTables,
  DeltaNetSlab,
  DeltaNetWeights,
  KeyValueSlab,
  LinearWeight,
  MoeWeights,
  Tensor,
} from '../backend/types.ts';
import { BufferPool } from './buffer-pool.ts';
import type { LayerType, TextConfig } from './config.ts';
import { loadAttention } from './layers/attention.ts';
import { loadDeltaNet } from './layers/delta-net.ts';
import { loadMoe } from './layers/moe.ts';
import type { WeightSource } from './tensor-source.ts';
import { backboneNames } from './weights.ts';

export interface BackboneLayer<B> {
  readonly type: LayerType;
  readonly inputNorm: Tensor<B>;
  readonly postNorm: Tensor<B>;
  readonly attention: AttentionWeights<B> | undefined;
  readonly deltaNet: DeltaNetWeights<B> | undefined;
  readonly moe: MoeWeights<B>;
}

/** Every slot's backbone state: K/V per attention layer, conv + recurrent state per DeltaNet layer (by layer index). */
export interface BackboneSlabs<B> {
  readonly keyValues: (KeyValueSlab<B> | undefined)[];
  readonly deltaNets: (DeltaNetSlab<B> | undefined)[];
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
    readonly tokenEmbeddings: Tensor<B>,
    public finalNorm: Tensor<B>,
    /** The lm_head rows of the candidate ids: [N, H]. */
    readonly candidateHead: LinearWeight<B>,
  ) {
    this.pool = new BufferPool(backend);
  }

  /**
   * The tensors of which `load` keeps only some rows, for a streamed load to read as those rows alone: an untied
   * head's candidate rows (a tied head is the token embedding, which every text id needs whole).
   */
  static keptRows(text: TextConfig, prefix: string, candidates: Int32Array): ReadonlyMap<string, Int32Array> {
    return new Map(text.tieWordEmbeddings ? [] : [[backboneNames(prefix).lmHead, candidates]]);
  }

  /** Loads every backbone tensor under `prefix`; `candidates` are the vocabulary ids whose logits are computed. */
  static async load<B>(
    source: WeightSource<B>,
    text: TextConfig,
    prefix: string,
    candidates: Int32Array,
  ): Promise<Backbone<B>> {
    const names = backboneNames(prefix);
    const layers: BackboneLayer<B>[] = [];
    for (let layer = 0; layer < text.layers; layer++) {
      const layerNames = names.layer(layer);
      const type = text.layerTypes[layer]!;
      layers.push({
        type,
        inputNorm: await source.tensor(layerNames.inputLayernorm),
        postNorm: await source.tensor(layerNames.postAttentionLayernorm),
        attention:
          type === 'full_attention'
            ? await loadAttention(source, layerNames.selfAttention, {
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
    return new Backbone(
      source.backend,
      text,
      layers,
      await source.tensor(names.embedTokens),
      await source.tensor(names.norm),
      // Only the candidates' rows of the head are kept (in the head's dtype): the other logits are never needed.
      await source.rows(text.tieWordEmbeddings ? names.embedTokens : names.lmHead, candidates),
    );
  }

  /** Slabs for `slots` lanes of `rowsPerSlot` rows: K/V bf16 [S, R, Hkv, D], conv bf16 [S, W−1, C], state f32. */
  allocateSlabs(slots: number, rowsPerSlot: number): BackboneSlabs<B> {
    const { backend, text } = this;
    const recurrent = [slots, text.linearValueHeads, text.linearKeyHeadDim, text.linearValueHeadDim];
    return {
      keyValues: this.layers.map((layer) =>
        layer.type === 'full_attention'
          ? {
              keys: backend.allocate('bf16', [slots, rowsPerSlot, text.keyValueHeads, text.headDim]),
              values: backend.allocate('bf16', [slots, rowsPerSlot, text.keyValueHeads, text.headDim]),
            }
          : undefined,
      ),
      deltaNets: this.layers.map((layer) =>
        layer.type === 'linear_attention'
          ? {
              conv: backend.allocate('bf16', [slots, text.linearConvKernel - 1, text.linearConvChannels]),
              recurrent: backend.allocate('f32', recurrent),
            }
          : undefined,
      ),
    };
  }

  /**
   * Runs `rows` input rows x [T, H] (the residual stream, overwritten) through every layer, each row at the slot and
   * position the call tables give, and writes the final-norm rows into `normed` [T, H].
   */
  forward(slabs: BackboneSlabs<B>, tables: CallTables<B>, x: B, rows: number, normed: B, observe?: LayerObserver<B>) {
    const { backend } = this;
    const hidden = this.text.hiddenSize;
    const eps = this.text.rmsNormEps;
    const count = rows * hidden;
    const layerInput = this.pool.get('layerInput', count);
    const layerOutput = this.pool.get('layerOutput', count);
    // Each residual add runs with the norm that reads its sum (the next layer's input norm, or the final norm).
    const first = this.layers[0];
    if (first === undefined) backend.zeroCentredRmsNorm(x, this.finalNorm, normed, rows, hidden, eps);
    else backend.zeroCentredRmsNorm(x, first.inputNorm, layerInput, rows, hidden, eps);
    this.layers.forEach((layer, index) => {
      if (layer.attention !== undefined)
        backend.attention(layer.attention, layerInput, slabs.keyValues[index]!, tables, layerOutput, rows);
      else backend.deltaNet(layer.deltaNet!, layerInput, slabs.deltaNets[index]!, tables, layerOutput, rows);
      backend.addZeroCentredRmsNorm(x, layerOutput, layer.postNorm, layerInput, rows, hidden, eps);
      backend.moe(layer.moe, layerInput, layerOutput, rows);
      const next = this.layers[index + 1];
      if (next === undefined) backend.addZeroCentredRmsNorm(x, layerOutput, this.finalNorm, normed, rows, hidden, eps);
      else backend.addZeroCentredRmsNorm(x, layerOutput, next.inputNorm, layerInput, rows, hidden, eps);
      observe?.(index, x);
    });
  }

  /** Logits of the candidate ids for `rows` final-norm rows: [T, N], fp32 sums (never rounded to bf16, so that
   *  near-ties are not made exact ties before the sampler). */
  candidateLogits(normed: B, rows: number, out: B): void {
    this.backend.linear(normed, this.candidateHead, out, rows, 'f32');
  }
}
