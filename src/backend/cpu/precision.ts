// Precision policies of the cpu backend: where values are rounded, and in which array type they live.
//   bf16: Float32Array storage; every activation the GPU writes in bf16 (projections, norms' outputs, the residual
//         stream, attention and DeltaNet outputs, expert outputs) is rounded to bf16 after its op; norms, softmax,
//         rotary, router probabilities, DeltaNet state and attention probabilities stay fp32 (the attention
//         kernel's online softmax weights V with fp32 probabilities, as flash attention does; eager torch in bf16
//         would round them to bf16 first).
//   fp32: Float32Array storage, no extra rounding (each stored element is fp32).
//   fp64: Float64Array everywhere: the oracle for kernel tests.
// Linear layers' sums are exact (double, then stored) unless a policy asks for fp32 sums rounded as a GPU's GEMM rounds
// them (`linearSums: 'f32'`, ops/linear-f32-sums.ts): a second valid bf16 implementation, for the parity floor.
// Rotary angles are fp32 (fround(position · inv_freq)) in every mode, as torch and the GPU form them.
import { DramaError } from '../../errors.ts';
import { roundArrayToBf16 } from '../../numeric/dtypes.ts';
import type { FloatArray } from '../../numeric/float-array.ts';

export type PrecisionName = 'bf16' | 'fp32' | 'fp64';
/** How linear layers round their sums: exactly (double) or in fp32 as a GPU's tensor-core GEMM does. */
export type LinearSums = 'exact' | 'f32';

export interface PrecisionPolicy {
  readonly name: PrecisionName;
  readonly linearSums: LinearSums;
  allocate(count: number): FloatArray;
  /** Rounds the first `count` elements as the GPU stores an activation (bf16), in place; identity otherwise. */
  roundActivations(values: FloatArray, count: number): void;
}

function noRounding(): void {}

const BF16_POLICY: PrecisionPolicy = {
  name: 'bf16',
  linearSums: 'exact',
  allocate: (count) => new Float32Array(count),
  roundActivations(values, count) {
    roundArrayToBf16((values as Float32Array).subarray(0, count));
  },
};

const FP32_POLICY: PrecisionPolicy = {
  name: 'fp32',
  linearSums: 'exact',
  allocate: (count) => new Float32Array(count),
  roundActivations: noRounding,
};

const FP64_POLICY: PrecisionPolicy = {
  name: 'fp64',
  linearSums: 'exact',
  allocate: (count) => new Float64Array(count),
  roundActivations: noRounding,
};

export const PRECISION_POLICIES: Record<PrecisionName, PrecisionPolicy> = {
  bf16: BF16_POLICY,
  fp32: FP32_POLICY,
  fp64: FP64_POLICY,
};

/** The policy `name` with linear sums as asked; fp32 sums in the fp64 oracle would defeat its purpose. */
export function precisionPolicy(name: PrecisionName, linearSums: LinearSums = 'exact'): PrecisionPolicy {
  const policy = PRECISION_POLICIES[name];
  if (linearSums === policy.linearSums) return policy;
  if (name === 'fp64') {
    throw new DramaError('PRECISION_INVALID', 'the fp64 oracle keeps exact sums; fp32 sums need bf16 or fp32', {
      param: 'linearSums',
    });
  }
  return { ...policy, linearSums };
}
