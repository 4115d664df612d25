// Bytes a frame step of B lanes reads, from the weight map (src/model/weights.ts) and the slab shapes, for the frame
// bench's roofline: every backbone projection and norm (attention, Gated DeltaNet), the router, the routed experts
// the step's rows reach, the shared expert, the candidate head rows, every tower weight, and the embedding rows
// gathered. Routed experts at B lanes: the expected number of distinct experts when each row picks k of E uniformly,
// E·(1 − (1 − k/E)^B) per layer (8 at B = 1; trained routers are less uniform, so this is an upper estimate).
// State (per lane, beside the weights): Gated DeltaNet recurrent and conv state read and written, every attention
// layer's K/V rows read up to the lane's position (backbone and tower), one K/V row written.
import { tensorByteLength } from '../../src/checkpoint/tensor.ts';
import type { Drama3Config } from '../../src/model/config.ts';
import type { TensorSpec } from '../../src/model/weights.ts';

export interface StepBytes {
  readonly batch: number;
  /** Attention and Gated DeltaNet projections, convs, norms (the backbone's non-MoE weights). */
  readonly projections: number;
  readonly router: number;
  readonly routedExperts: number;
  readonly sharedExpert: number;
  /** The candidate head rows [N, H] and the final norm. */
  readonly head: number;
  /** Every tower weight (projections, MLPs, norms, the nine heads). */
  readonly tower: number;
  /** Embedding rows gathered: the frame row's two rows and one code row per tower layer, per lane. */
  readonly embeddings: number;
  /** Weights read once per step, whatever the batch (all of the above). */
  readonly weights: number;
  /** Lane state read and written by the step, summed over its lanes at `position`. */
  readonly state: number;
  /** Expected distinct experts per MoE layer. */
  readonly expertsPerLayer: number;
}

/** Expected distinct experts when `batch` rows each pick `topK` of `experts` uniformly without repetition. */
export function expectedDistinctExperts(experts: number, topK: number, batch: number): number {
  return experts * (1 - (1 - topK / experts) ** batch);
}

function bytesOf(spec: TensorSpec): number {
  return tensorByteLength(spec.dtype, spec.shape);
}

/** Per-lane state bytes a step reads and writes at `position` (K/V rows 0..position read, one row written). */
export function laneStepStateBytes(config: Drama3Config, position: number): number {
  const { text, tower } = config;
  const recurrent = text.linearValueHeads * text.linearKeyHeadDim * text.linearValueHeadDim * 4;
  const conv = (text.linearConvKernel - 1) * text.linearConvChannels * 2;
  const deltaNet = text.linearAttentionLayers.length * 2 * (recurrent + conv);
  const backboneRow = 2 * text.keyValueHeads * text.headDim * 2;
  const towerRow = 2 * tower.keyValueHeads * tower.headDim * 2;
  const keyValues = (text.fullAttentionLayers.length * backboneRow + tower.layers * towerRow) * (position + 2);
  return deltaNet + keyValues;
}

/** Device bytes one lane's slabs hold at `rows` rows: K/V of every attention layer, DeltaNet conv and state. */
export function laneSlabBytes(config: Drama3Config, rows: number): { keyValues: number; deltaNet: number } {
  const { text, tower } = config;
  const backboneRow = 2 * text.keyValueHeads * text.headDim * 2;
  const towerRow = 2 * tower.keyValueHeads * tower.headDim * 2;
  const recurrent = text.linearValueHeads * text.linearKeyHeadDim * text.linearValueHeadDim * 4;
  const conv = (text.linearConvKernel - 1) * text.linearConvChannels * 2;
  return {
    keyValues: (text.fullAttentionLayers.length * backboneRow + tower.layers * towerRow) * rows,
    deltaNet: text.linearAttentionLayers.length * (recurrent + conv),
  };
}

/** What one frame step of `batch` lanes at `position` reads, by part (FP8 experts: weights plus block scales). */
export function stepBytes(
  config: Drama3Config,
  specs: readonly TensorSpec[],
  candidates: number,
  batch: number,
  position: number,
): StepBytes {
  const { text } = config;
  const expertsPerLayer = expectedDistinctExperts(text.experts, text.expertsPerToken, batch);
  const parts = { projections: 0, router: 0, routedExperts: 0, sharedExpert: 0, head: 0, tower: 0, embeddings: 0 };
  for (const spec of specs) {
    const bytes = bytesOf(spec);
    const rowBytes = bytes / spec.shape[0]!;
    if (spec.role === 'codebook_embedding' || spec.role === 'token_embedding') {
      // Backbone: the token row and one code row per lane; tower: one code row per layer per lane.
      const rows = spec.part === 'tower' ? config.tower.layers : 1;
      parts.embeddings += batch * rows * rowBytes;
    } else if (spec.part === 'tower') parts.tower += bytes;
    else if (spec.role === 'output_head') parts.head += candidates * rowBytes;
    else if (spec.role === 'expert' || spec.role === 'expert_scale') {
      parts.routedExperts += (bytes * expertsPerLayer) / text.experts;
    } else if (spec.role === 'router') parts.router += bytes;
    else if (spec.name.includes('.shared_expert')) parts.sharedExpert += bytes;
    else if (spec.layer === undefined) parts.head += bytes;
    else parts.projections += bytes;
  }
  const weights = Object.values(parts).reduce((sum, value) => sum + value, 0);
  return { batch, ...parts, weights, state: batch * laneStepStateBytes(config, position), expertsPerLayer };
}

/** Bytes of the weight map (as the device holds it: FP8 experts with their scales). */
export function weightMapBytes(specs: readonly TensorSpec[]): number {
  return specs.reduce((sum, spec) => sum + bytesOf(spec), 0);
}
