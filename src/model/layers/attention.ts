// Loads an attention block's weights: the backbone's gated form (q_proj rows per head [query | gate], NeoX partial
// RoPE) or the tower's plain form (interleaved RoPE), both with zero-centred q/k norms over the head dim. Shapes come
// from the weight map.
import type { AttentionGeometry, AttentionWeights } from '../../backend/types.ts';
import type { WeightSource } from '../tensor-source.ts';
import type { SelfAttentionNames } from '../weights.ts';

export async function loadAttention<B>(
  source: WeightSource<B>,
  names: SelfAttentionNames,
  geometry: AttentionGeometry,
): Promise<AttentionWeights<B>> {
  return {
    qProj: await source.linear(names.qProj),
    kProj: await source.linear(names.kProj),
    vProj: await source.linear(names.vProj),
    oProj: await source.linear(names.oProj),
    qNorm: await source.tensor(names.qNorm),
    kNorm: await source.tensor(names.kNorm),
    ...geometry,
  };
}
