// Runs a linear weight on the cpu: bf16/f16/f32 weights directly (each row widened per use), e4m3 block weights after
// quantising the activations per row per 128 columns (MODEL.md §2). The result is rounded as the policy says.
import type { LinearWeight } from '../types.ts';
import { linearFp8BlockTensor, quantizeActivationsE4m3 } from './ops/fp8.ts';
import { linearTensor } from './ops/linear.ts';
import type { FloatArray } from './ops/types.ts';
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
): void {
  const [outFeatures, inFeatures] = weight.shape as [number, number];
  const row = scratch.rowFor('linear.row', inFeatures);
  if (weight.dtype === 'e4m3') {
    const quantized = scratch.floatsFor('fp8.quantized', rows * inFeatures);
    const scales = scratch.floatsFor('fp8.scales', rows * Math.ceil(inFeatures / 128));
    quantizeActivationsE4m3(x, rows, inFeatures, quantized, scales);
    const weightScales = weight.scales!.data as Float32Array;
    linearFp8BlockTensor(quantized, scales, weight, weightScales, out, rows, inFeatures, outFeatures, row);
  } else {
    linearTensor(x, weight, out, rows, inFeatures, outFeatures, row);
  }
  policy.roundActivations(out, rows * outFeatures);
}
