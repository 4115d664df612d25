// Runs a linear weight on the cpu: bf16/f16/f32 weights directly (from the widened cache, or each row widened per use),
// e4m3 block weights after quantising the activations per row per 128 columns (MODEL.md §2). The result is rounded as
// the policy says, or kept as fp32 sums for an f32 output (the logits heads). The sums are exact (double) unless the
// policy asks for fp32 sums as a GPU rounds them (linear-f32-sums.ts).

import type { FloatArray } from '../../numeric/float-array.ts';
import type { LinearWeight } from '../types.ts';
import { linearFp8Block, linearFp8BlockTensor, quantizeActivationsE4m3 } from './ops/fp8.ts';
import { linear, linearTensor } from './ops/linear.ts';
import { linearF32Sums, linearFp8BlockF32Sums } from './ops/linear-f32-sums.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';
import type { CpuBuffer } from './tensors.ts';

export function runLinear(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  x: FloatArray,
  weight: LinearWeight<CpuBuffer>,
  out: FloatArray,
  rows: number,
  output: 'bf16' | 'f32' = 'bf16',
): void {
  const [outFeatures, inFeatures] = weight.shape as [number, number];
  const row = scratch.rowFor('linear.row', inFeatures);
  const data = weight.data;
  const values = data instanceof Float32Array || data instanceof Float64Array ? data : scratch.widened.get(weight);
  const f32Sums = policy.linearSums === 'f32';
  if (weight.dtype === 'e4m3') {
    const quantized = scratch.floatsFor('fp8.quantized', rows * inFeatures);
    const scales = scratch.floatsFor('fp8.scales', rows * Math.ceil(inFeatures / 128));
    quantizeActivationsE4m3(x, rows, inFeatures, quantized, scales);
    const weightScales = weight.scales!.data as Float32Array;
    if (f32Sums) {
      linearFp8BlockF32Sums(quantized, scales, values ?? weight, weightScales, out, rows, inFeatures, outFeatures, row);
    } else if (values !== undefined)
      linearFp8Block(quantized, scales, values, weightScales, out, rows, inFeatures, outFeatures);
    else linearFp8BlockTensor(quantized, scales, weight, weightScales, out, rows, inFeatures, outFeatures, row);
  } else if (f32Sums) {
    linearF32Sums(x, values ?? weight, out, rows, inFeatures, outFeatures, row);
  } else if (values !== undefined) {
    linear(x, values, out, rows, inFeatures, outFeatures);
  } else {
    linearTensor(x, weight, out, rows, inFeatures, outFeatures, row);
  }
  // An f32 output keeps the sums as the policy's array stores them: fp32 (bf16 and fp32 modes), doubles (fp64 oracle).
  if (output === 'bf16') policy.roundActivations(out, rows * outFeatures);
}
