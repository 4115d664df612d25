// A stride-s causal conv as an ordinary causal conv over rows regrouped s at a time: rows [T, C] row-major are the
// same bytes as [T/s, s·C], and CausalConv's output n reads inputs n·s − (K − s) … n·s + s − 1, which are regrouped
// rows n − K/s + 1 … n. So a conv with K = m·s becomes a stride-1 conv of m taps over s·C channels, weight
// w'[o, j·C + i, t] = w[o, i, t·s + j], carrying (m − 1) regrouped rows = K − s inputs (CausalConv's history), with
// Snake's α repeated s times. The encoder's down convs (K = 2s) and downsample convs (K = s) need no other kernel.
import { DramaError } from '../../errors.ts';

export interface StridedConvShape {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly stride: number;
}

/** Taps of the regrouped conv: K / s. */
export function regroupedKernel(shape: StridedConvShape): number {
  const { kernel, stride } = shape;
  if (!Number.isInteger(kernel / stride) || stride < 1) {
    throw new DramaError(
      'CODEC_STRIDE_UNSUPPORTED',
      `a strided codec conv needs K a multiple of s, got K ${kernel}, s ${stride}`,
      {
        kind: 'internal',
      },
    );
  }
  return kernel / stride;
}

/** PyTorch conv weight [Cout, Cin, K] at stride s → the regrouped conv's [Cout, s·Cin, K/s] at stride 1. */
export function regroupedConvWeight(weight: Float32Array, shape: StridedConvShape): Float32Array {
  const { inputs, outputs, kernel, stride } = shape;
  const taps = regroupedKernel(shape);
  const wide = stride * inputs;
  const out = new Float32Array(weight.length);
  for (let output = 0; output < outputs; output++) {
    for (let phase = 0; phase < stride; phase++) {
      for (let input = 0; input < inputs; input++) {
        for (let tap = 0; tap < taps; tap++) {
          out[(output * wide + phase * inputs + input) * taps + tap] =
            weight[(output * inputs + input) * kernel + tap * stride + phase]!;
        }
      }
    }
  }
  return out;
}

/** Snake's α [C] for the regrouped rows [s·C]: one copy per phase. */
export function regroupedAlpha(alpha: Float32Array, stride: number): Float32Array {
  const out = new Float32Array(alpha.length * stride);
  for (let phase = 0; phase < stride; phase++) out.set(alpha, phase * alpha.length);
  return out;
}
