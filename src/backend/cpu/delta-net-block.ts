// Gated DeltaNet on the cpu (MODEL.md §2) over the sequences of a call. x: [T, H].
//   qkv = in_proj_qkv(x) → causal depthwise conv (kernel W, the slot's conv state carried) + SiLU → q [T, Kh, Kd] |
//   k | v [T, Vh, Vd]; z = in_proj_z(x); beta = sigmoid(in_proj_b(x)); g = −exp(A_log) · softplus(in_proj_a(x) +
//   dt_bias); o = delta rule with the slot's recurrent state; y = out_proj(norm(o) · w · SiLU(z)).
//   Projections run over every row of the call at once; the conv and the delta rule walk each sequence's rows in
//   order (sequence table), reading and writing its slot's state.

import type { FloatArray } from '../../numeric/float-array.ts';
import { gatedRmsNorm } from '../../numeric/norms.ts';
import type { CallTables, DeltaNetSlab, DeltaNetWeights } from '../types.ts';
import { runLinear } from './linear-layer.ts';
import { sigmoid, softplus } from './ops/activations.ts';
import { causalConv1dSilu } from './ops/conv.ts';
import { type DeltaRuleShape, gatedDeltaChunked, gatedDeltaRecurrent } from './ops/delta-rule.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';
import { type CpuBuffer, readFloats } from './tensors.ts';

/**
 * Which form of the delta rule runs: recurrent (the default) makes every prefill chunking bit-identical; chunked
 * runs the 64-row form in blocks cut at absolute positions (a multiple of 64), which is the same map but rounds
 * differently wherever a call starts or ends inside a block.
 */
export type DeltaRuleForm = 'recurrent' | 'chunked';

const CHUNK = 64;

/** Widens a small weight vector into a scratch buffer of the policy's float type. */
function widened(scratch: ScratchPool, name: string, tensor: DeltaNetWeights<CpuBuffer>['aLog'], count: number) {
  const out = scratch.floatsFor(name, count);
  readFloats(tensor, 0, count, out, 0, scratch.rowFor(`${name}.row`, count));
  return out;
}

function runDeltaRule(
  form: DeltaRuleForm,
  scratch: ScratchPool,
  shape: DeltaRuleShape,
  parts: { q: FloatArray; k: FloatArray; v: FloatArray; g: FloatArray; beta: FloatArray; core: FloatArray },
  state: FloatArray,
  first: number,
  count: number,
  startPosition: number,
): void {
  const keyWidth = shape.keyHeads * shape.keyDim;
  const valueWidth = shape.valueHeads * shape.valueDim;
  const heads = shape.valueHeads;
  const piece = (from: number, rows: number) => {
    const row = first + from;
    const args = [
      parts.q.subarray(row * keyWidth),
      parts.k.subarray(row * keyWidth),
      parts.v.subarray(row * valueWidth),
      parts.g.subarray(row * heads),
      parts.beta.subarray(row * heads),
      state,
      parts.core.subarray(row * valueWidth),
      rows,
      shape,
    ] as const;
    if (form === 'chunked') gatedDeltaChunked(...args);
    else
      gatedDeltaRecurrent(...args, {
        query: scratch.doublesFor('deltaRule.query', shape.keyDim),
        key: scratch.doublesFor('deltaRule.key', shape.keyDim),
        delta: scratch.doublesFor('deltaRule.delta', shape.valueDim),
        state: scratch.doublesFor('deltaRule.state', shape.keyDim * shape.valueDim),
      });
  };
  if (form === 'recurrent') {
    piece(0, count);
    return;
  }
  for (let from = 0; from < count; ) {
    const end = Math.min(count, (Math.floor((startPosition + from) / CHUNK) + 1) * CHUNK - startPosition);
    piece(from, end - from);
    from = end;
  }
}

export function runDeltaNet(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  form: DeltaRuleForm,
  weights: DeltaNetWeights<CpuBuffer>,
  x: FloatArray,
  slab: DeltaNetSlab<CpuBuffer>,
  tables: CallTables<CpuBuffer>,
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
  const convWeight = widened(scratch, 'deltaNet.convWeight', weights.conv, channels * convKernel);
  const aLog = widened(scratch, 'deltaNet.aLog', weights.aLog, valueHeads);
  const dtBias = widened(scratch, 'deltaNet.dtBias', weights.dtBias, valueHeads);
  const normWeight = widened(scratch, 'deltaNet.norm', weights.norm, valueDim);
  const sequences = tables.sequences as Int32Array;
  const convStates = slab.conv.data as FloatArray;
  const convStateWidth = (convKernel - 1) * channels;
  const convolved = scratch.floatsFor('deltaNet.convolved', rows * channels);
  for (let s = 0; s < tables.sequenceCount; s++) {
    const slot = sequences[4 * s]!;
    const first = sequences[4 * s + 1]!;
    const count = sequences[4 * s + 2]!;
    causalConv1dSilu(
      mixed.subarray(first * channels),
      convWeight,
      convStates.subarray(slot * convStateWidth, (slot + 1) * convStateWidth),
      convolved.subarray(first * channels),
      count,
      channels,
      convKernel,
    );
  }
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
      g[index] = -Math.exp(aLog[h]!) * softplus(a[index]! + dtBias[h]!);
    }
  }
  policy.roundActivations(beta, beta.length);
  const core = scratch.floatsFor('deltaNet.core', rows * valueWidth);
  const shape = { keyHeads, valueHeads, keyDim, valueDim };
  const recurrent = slab.recurrent.data as FloatArray;
  const stateWidth = valueHeads * keyDim * valueDim;
  for (let s = 0; s < tables.sequenceCount; s++) {
    const slot = sequences[4 * s]!;
    const state = recurrent.subarray(slot * stateWidth, (slot + 1) * stateWidth);
    const parts = { q, k, v, g, beta, core };
    runDeltaRule(
      form,
      scratch,
      shape,
      parts,
      state,
      sequences[4 * s + 1]!,
      sequences[4 * s + 2]!,
      sequences[4 * s + 3]!,
    );
  }
  policy.roundActivations(core, core.length);
  const normed = scratch.floatsFor('deltaNet.normed', rows * valueWidth);
  gatedRmsNorm(core, z, normWeight, normed, rows * valueHeads, valueDim, weights.eps);
  policy.roundActivations(normed, normed.length);
  runLinear(policy, scratch, normed, weights.outProj, out, rows);
}
