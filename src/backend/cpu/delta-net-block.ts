// Gated DeltaNet on the cpu (MODEL.md §2). x: [T, H].
//   qkv = in_proj_qkv(x) → causal depthwise conv (kernel K, state carried) + SiLU → q [T, Kh, Kd] | k | v [T, Vh, Vd];
//   z = in_proj_z(x); beta = sigmoid(in_proj_b(x)); g = −exp(A_log) · softplus(in_proj_a(x) + dt_bias);
//   o = delta rule (recurrent, or the 64-row chunked form; same map); y = out_proj(norm(o) · w · SiLU(z)).

import type { FloatArray } from '../../numeric/float-array.ts';
import { gatedRmsNorm } from '../../numeric/norms.ts';
import type { DeltaNetState, DeltaNetWeights } from '../types.ts';
import { runLinear } from './linear-layer.ts';
import { sigmoid, softplus } from './ops/activations.ts';
import { causalConv1dSilu } from './ops/conv.ts';
import { gatedDeltaChunked, gatedDeltaRecurrent } from './ops/delta-rule.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';

/** Which form of the delta rule runs: both are the same map; recurrent makes any row split bit-identical. */
export type DeltaRuleForm = 'recurrent' | 'chunked';

export function runDeltaNet(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  form: DeltaRuleForm,
  weights: DeltaNetWeights<FloatArray>,
  x: FloatArray,
  state: DeltaNetState<FloatArray>,
  out: FloatArray,
  rows: number,
): void {
  const { keyHeads, valueHeads, keyDim, valueDim, convKernel } = weights;
  const keyWidth = keyHeads * keyDim;
  const valueWidth = valueHeads * valueDim;
  const channels = 2 * keyWidth + valueWidth;
  const mixed = scratch.floatsFor('deltaNet.mixed', rows * channels);
  const z = scratch.floatsFor('deltaNet.z', rows * valueWidth);
  const b = scratch.floatsFor('deltaNet.b', rows * valueHeads);
  const a = scratch.floatsFor('deltaNet.a', rows * valueHeads);
  runLinear(policy, scratch, x, weights.inProjQkv, mixed, rows);
  runLinear(policy, scratch, x, weights.inProjZ, z, rows);
  runLinear(policy, scratch, x, weights.inProjB, b, rows);
  runLinear(policy, scratch, x, weights.inProjA, a, rows);
  const convolved = scratch.floatsFor('deltaNet.convolved', rows * channels);
  causalConv1dSilu(mixed, weights.conv, state.conv, convolved, rows, channels, convKernel);
  policy.roundActivations(convolved, convolved.length);
  const q = scratch.floatsFor('deltaNet.q', rows * keyWidth);
  const k = scratch.floatsFor('deltaNet.k', rows * keyWidth);
  const v = scratch.floatsFor('deltaNet.v', rows * valueWidth);
  for (let t = 0; t < rows; t++) {
    const start = t * channels;
    q.set(convolved.subarray(start, start + keyWidth), t * keyWidth);
    k.set(convolved.subarray(start + keyWidth, start + 2 * keyWidth), t * keyWidth);
    v.set(convolved.subarray(start + 2 * keyWidth, start + channels), t * valueWidth);
  }
  const beta = scratch.floatsFor('deltaNet.beta', rows * valueHeads);
  const g = scratch.floatsFor('deltaNet.g', rows * valueHeads);
  for (let t = 0; t < rows; t++) {
    for (let h = 0; h < valueHeads; h++) {
      const index = t * valueHeads + h;
      beta[index] = sigmoid(b[index]!);
      g[index] = -Math.exp(weights.aLog[h]!) * softplus(a[index]! + weights.dtBias[h]!);
    }
  }
  policy.roundActivations(beta, beta.length);
  const core = scratch.floatsFor('deltaNet.core', rows * valueWidth);
  const shape = { keyHeads, valueHeads, keyDim, valueDim };
  if (form === 'chunked') gatedDeltaChunked(q, k, v, g, beta, state.recurrent, core, rows, shape);
  else gatedDeltaRecurrent(q, k, v, g, beta, state.recurrent, core, rows, shape);
  policy.roundActivations(core, core.length);
  const normed = scratch.floatsFor('deltaNet.normed', rows * valueWidth);
  gatedRmsNorm(core, z, weights.norm, normed, rows * valueHeads, valueDim, weights.eps);
  policy.roundActivations(normed, normed.length);
  runLinear(policy, scratch, normed, weights.outProj, out, rows);
}
