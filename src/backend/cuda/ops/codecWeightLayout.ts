// The codec convs' weight layout (kernels/cuda/codec_conv.cuh): PyTorch's folded conv [Cout, Cin, K] and transposed
// conv [Cin, Cout, K] weights → the kernels' [Cin, K, Cout], and fp32 → fp16 bits as the release casts them.
import { float32ToF16Bits } from '../../../numeric/dtypes.ts';

/** Any weight → the kernel's [Cin, K, Cout], `source` giving each (input, output, tap)'s index in the given layout. */
function inputTapOutput(
  weight: Float32Array,
  inputs: number,
  outputs: number,
  kernel: number,
  source: (input: number, output: number, tap: number) => number,
): Float32Array {
  const laid = new Float32Array(weight.length);
  for (let input = 0; input < inputs; input++) {
    for (let output = 0; output < outputs; output++) {
      for (let tap = 0; tap < kernel; tap++)
        laid[(input * kernel + tap) * outputs + output] = weight[source(input, output, tap)]!;
    }
  }
  return laid;
}

/** Conv weight [Cout, Cin, K] (PyTorch's, folded) → the kernel's [Cin, K, Cout]. */
export function codecConvWeightLayout(weight: Float32Array, outputs: number, inputs: number, kernel: number) {
  return inputTapOutput(
    weight,
    inputs,
    outputs,
    kernel,
    (input, output, tap) => (output * inputs + input) * kernel + tap,
  );
}

/** Transposed conv weight [Cin, Cout, K] (PyTorch's, folded) → the kernel's [Cin, K, Cout]. */
export function codecTransposedWeightLayout(weight: Float32Array, inputs: number, outputs: number, kernel: number) {
  return inputTapOutput(
    weight,
    inputs,
    outputs,
    kernel,
    (input, output, tap) => (input * outputs + output) * kernel + tap,
  );
}

/**
 * Transposed conv weight [Cin, Cout, K] (PyTorch's, folded), K = m·s → the conv it is over input rows (codecConv.ts
 * transposedOnTensorCores): [Cin, m, s·Cout], conv tap t holding phase j's weight j + (m − 1 − t)·s.
 */
export function codecTransposedAsConvLayout(
  weight: Float32Array,
  inputs: number,
  outputs: number,
  kernel: number,
  stride: number,
): Float32Array {
  const taps = kernel / stride;
  const laid = new Float32Array(weight.length);
  for (let input = 0; input < inputs; input++) {
    for (let tap = 0; tap < taps; tap++) {
      for (let phase = 0; phase < stride; phase++) {
        const source = phase + (taps - 1 - tap) * stride;
        const row = ((input * taps + tap) * stride + phase) * outputs;
        for (let output = 0; output < outputs; output++)
          laid[row + output] = weight[(input * outputs + output) * kernel + source]!;
      }
    }
  }
  return laid;
}

/** Each output's bias once per phase: the transposed conv's [Cout] → the conv's [s·Cout]. */
export function repeatedBias(bias: Float32Array, stride: number): Float32Array {
  const out = new Float32Array(bias.length * stride);
  for (let phase = 0; phase < stride; phase++) out.set(bias, phase * bias.length);
  return out;
}

/** fp32 values → fp16 bits, round to nearest even (the release's cast after weight-norm folding). */
export function toF16Bits(values: Float32Array): Uint16Array {
  const bits = new Uint16Array(values.length);
  for (let index = 0; index < values.length; index++) bits[index] = float32ToF16Bits(values[index]!);
  return bits;
}
