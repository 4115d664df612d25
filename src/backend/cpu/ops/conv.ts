// Causal depthwise conv1d + SiLU with carried state (the Gated DeltaNet input conv).
//   x: [T, C]; weight: [C, K] (torch's conv1d weight [C, 1, K] squeezed); state: [K−1, C], the previous K−1 input
//   rows, oldest first (zeros at the start of a sequence); out: [T, C] (must not alias x).
//   y[t, c] = SiLU(Σ_j weight[c, j] · in[t − (K−1) + j, c]), where in[] is state followed by x. The state is updated to
//   the last K−1 input rows, so any split of the rows into calls gives the same outputs.
import type { FloatArray } from '../../../numeric/float-array.ts';

export function causalConv1dSilu(
  x: FloatArray,
  weight: FloatArray,
  state: FloatArray,
  out: FloatArray,
  rows: number,
  channels: number,
  kernel: number,
): void {
  const history = kernel - 1;
  for (let t = 0; t < rows; t++) {
    for (let c = 0; c < channels; c++) {
      let sum = 0;
      for (let j = 0; j < kernel; j++) {
        const source = t - history + j;
        const input = source >= 0 ? x[source * channels + c]! : state[(history + source) * channels + c]!;
        sum += weight[c * kernel + j]! * input;
      }
      out[t * channels + c] = sum / (1 + Math.exp(-sum));
    }
  }
  // Shift the last K−1 input rows into the state.
  for (let r = 0; r < history; r++) {
    const source = rows - history + r;
    for (let c = 0; c < channels; c++) {
      state[r * channels + c] = source >= 0 ? x[source * channels + c]! : state[(history + source) * channels + c]!;
    }
  }
}
