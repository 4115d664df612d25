// Runs a LinearWeight on the cpu: dense weights directly, FP8 block weights after quantising the activations per row
// per 128 columns (MODEL.md §2). The result is rounded as the policy says.

import type { FloatArray } from '../../numeric/float-array.ts';
import type { LinearWeight } from '../types.ts';
import { linearFp8Block, quantizeActivationsE4m3 } from './ops/fp8.ts';
import { linear } from './ops/linear.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';

export function runLinear(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  x: FloatArray,
  weight: LinearWeight<FloatArray>,
  out: FloatArray,
  rows: number,
): void {
  const { inFeatures, outFeatures } = weight;
  if (weight.format === 'dense') {
    linear(x, weight.values, out, rows, inFeatures, outFeatures);
  } else {
    const quantized = scratch.floatsFor('fp8.quantized', rows * inFeatures);
    const scales = scratch.floatsFor('fp8.scales', rows * Math.ceil(inFeatures / 128));
    quantizeActivationsE4m3(x, rows, inFeatures, quantized, scales);
    linearFp8Block(quantized, scales, weight.values, weight.scales!, out, rows, inFeatures, outFeatures);
  }
  policy.roundActivations(out, rows * outFeatures);
}
