// Loads an attention block's weights: the backbone's gated form (q_proj rows per head [query | gate], NeoX partial
// RoPE) or the tower's plain form (interleaved RoPE), both with zero-centred q/k norms over the head dim.
import type { AttentionGeometry, AttentionWeights } from '../../backend/types.ts';
import type { TensorSource } from '../tensor-source.ts';
import type { SelfAttentionNames } from '../weights.ts';

export interface AttentionShape extends AttentionGeometry {
  readonly hidden: number;
}

export async function loadAttention<B>(
  source: TensorSource<B>,
  names: SelfAttentionNames,
  shape: AttentionShape,
): Promise<AttentionWeights<B>> {
  const { hidden, ...geometry } = shape;
  const { heads, keyValueHeads, headDim } = geometry;
  const queryRows = heads * headDim * (geometry.outputGate ? 2 : 1);
  return {
    qProj: await source.linear(names.qProj, queryRows, hidden),
    kProj: await source.linear(names.kProj, keyValueHeads * headDim, hidden),
    vProj: await source.linear(names.vProj, keyValueHeads * headDim, hidden),
    oProj: await source.linear(names.oProj, hidden, heads * headDim),
    qNorm: await source.vector(names.qNorm, [headDim]),
    kNorm: await source.vector(names.kNorm, [headDim]),
    ...geometry,
  };
}
