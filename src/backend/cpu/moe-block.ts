// The sparse MoE block and plain SwiGLU MLPs on the cpu. x: [T, H].
//   router logits = gate(x) [T, E]; softmax (fp32) → top-k → renormalise; each row's output is Σ over its chosen
//   experts in ascending expert index of weight · down(silu(gate(x)) · up(x)), plus sigmoid(shared_gate(x)) ·
//   shared(x). Rows routed to one expert run together; a row's sum never depends on the other rows in the call.

import type { FloatArray } from '../../numeric/float-array.ts';
import type { MoeWeights, SwiGluWeights } from '../types.ts';
import { runLinear } from './linear-layer.ts';
import { sigmoid, swiglu } from './ops/activations.ts';
import { routerTopK } from './ops/router.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';
import type { CpuBuffer } from './tensors.ts';

export function runSwiGlu(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  weights: SwiGluWeights<CpuBuffer>,
  x: FloatArray,
  out: FloatArray,
  rows: number,
): void {
  const width = weights.gate.shape[0]!;
  const gate = scratch.floatsFor('swiGlu.gate', rows * width);
  const up = scratch.floatsFor('swiGlu.up', rows * width);
  runLinear(policy, scratch, x, weights.gate, gate, rows);
  runLinear(policy, scratch, x, weights.up, up, rows);
  swiglu(gate, up, gate, rows * width);
  policy.roundActivations(gate, rows * width);
  runLinear(policy, scratch, gate, weights.down, out, rows);
}

export function runMoe(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  weights: MoeWeights<CpuBuffer>,
  x: FloatArray,
  out: FloatArray,
  rows: number,
): void {
  const hidden = weights.router.shape[1]!;
  const experts = weights.experts.length;
  const { topK } = weights;
  const logits = scratch.floatsFor('moe.logits', rows * experts);
  runLinear(policy, scratch, x, weights.router, logits, rows);
  const chosen = scratch.integersFor('moe.chosen', rows * topK);
  const routing = scratch.doublesFor('moe.routing', rows * topK);
  routerTopK(logits, rows, experts, topK, chosen, routing, scratch.doublesFor('moe.probabilities', experts));
  const routingWeights = scratch.floatsFor('moe.routingWeights', rows * topK);
  routingWeights.set(routing);
  policy.roundActivations(routingWeights, routingWeights.length);
  const accumulated = scratch.doublesFor('moe.accumulated', rows * hidden);
  accumulated.fill(0);
  const members = scratch.integersFor('moe.members', rows);
  const slots = scratch.integersFor('moe.slots', rows);
  const gathered = scratch.floatsFor('moe.gathered', rows * hidden);
  const expertOut = scratch.floatsFor('moe.expertOut', rows * hidden);
  for (let e = 0; e < experts; e++) {
    let count = 0;
    for (let t = 0; t < rows; t++) {
      for (let k = 0; k < topK; k++) {
        if (chosen[t * topK + k] !== e) continue;
        members[count] = t;
        slots[count] = t * topK + k;
        gathered.set(x.subarray(t * hidden, (t + 1) * hidden), count * hidden);
        count++;
      }
    }
    if (count === 0) continue;
    runSwiGlu(policy, scratch, weights.experts[e]!, gathered, expertOut, count);
    for (let m = 0; m < count; m++) {
      const weight = routingWeights[slots[m]!]!;
      const target = members[m]! * hidden;
      for (let c = 0; c < hidden; c++) accumulated[target + c] += weight * expertOut[m * hidden + c]!;
    }
  }
  const shared = scratch.floatsFor('moe.shared', rows * hidden);
  runSwiGlu(policy, scratch, weights.shared, x, shared, rows);
  const sharedGate = scratch.floatsFor('moe.sharedGate', rows);
  runLinear(policy, scratch, x, weights.sharedGate, sharedGate, rows);
  for (let t = 0; t < rows; t++) {
    const scale = sigmoid(sharedGate[t]!);
    for (let c = 0; c < hidden; c++) {
      const index = t * hidden + c;
      out[index] = accumulated[index]! + scale * shared[index]!;
    }
  }
  policy.roundActivations(out, rows * hidden);
}
