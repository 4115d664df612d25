// Causal 1-D convolutions over channels-first activations [C, T] (T rows of this chunk, row-contiguous per channel),
// each carrying the input rows it still needs from earlier chunks so that chunked and whole runs compute every output
// from the same inputs in the same order. Sums run in float64 in a fixed order (input channel, then tap) and round
// to float32 once per output. Weights: conv [Cout, Cin, K], transposed conv [Cin, Cout, K], already folded.
import type { ScratchArena } from './scratch.ts';

export interface ConvShape {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly dilation?: number;
  readonly stride?: number;
  /** Depthwise (groups = channels): weight [C, 1, K]. */
  readonly depthwise?: boolean;
}

/** Output rows per tile: accumulators of this size stay in the first-level cache. */
const TILE_ROWS = 512;

/** Below this many rows the per-row loop wins; above it the per-tap loop streams memory better. */
const SHORT_CHUNK_ROWS = 48;

/**
 * sums[r] += Σ_tap w[tap] · x[base + r·stride + tap·dilation], the tap sum formed first (from 0, in tap order) and then
 * added: every loop shape below does exactly these additions, so results do not depend on the chunk length.
 */
function accumulateTaps(
  weight: Float32Array,
  weightBase: number,
  kernel: number,
  x: Float32Array,
  base: number,
  dilation: number,
  stride: number,
  rows: number,
  sums: Float64Array,
  partial: Float64Array,
): void {
  if (kernel === 7) {
    // The most common kernel (residual units, ConvNeXt, first and last convs) with its taps held in locals.
    const w0 = weight[weightBase]!;
    const w1 = weight[weightBase + 1]!;
    const w2 = weight[weightBase + 2]!;
    const w3 = weight[weightBase + 3]!;
    const w4 = weight[weightBase + 4]!;
    const w5 = weight[weightBase + 5]!;
    const w6 = weight[weightBase + 6]!;
    const step = dilation;
    for (let row = 0; row < rows; row++) {
      const at = base + row * stride;
      sums[row]! +=
        w0 * x[at]! +
        w1 * x[at + step]! +
        w2 * x[at + 2 * step]! +
        w3 * x[at + 3 * step]! +
        w4 * x[at + 4 * step]! +
        w5 * x[at + 5 * step]! +
        w6 * x[at + 6 * step]!;
    }
    return;
  }
  if (kernel === 1) {
    const w0 = weight[weightBase]!;
    for (let row = 0; row < rows; row++) sums[row]! += w0 * x[base + row * stride]!;
    return;
  }
  if (rows < SHORT_CHUNK_ROWS) {
    for (let row = 0; row < rows; row++) {
      let sum = 0;
      let position = base + row * stride;
      for (let tap = 0; tap < kernel; tap++) {
        sum += weight[weightBase + tap]! * x[position]!;
        position += dilation;
      }
      sums[row]! += sum;
    }
    return;
  }
  partial.fill(0);
  for (let tap = 0; tap < kernel; tap++) {
    const value = weight[weightBase + tap]!;
    const start = base + tap * dilation;
    if (stride === 1) {
      for (let row = 0; row < rows; row++) partial[row]! += value * x[start + row]!;
    } else {
      for (let row = 0; row < rows; row++) partial[row]! += value * x[start + row * stride]!;
    }
  }
  for (let row = 0; row < rows; row++) sums[row]! += partial[row]!;
}

/**
 * [C, historyRows + rows]: each channel's carried rows, then this chunk's; `history` [C, historyRows] then takes the
 * last historyRows of every channel for the next chunk.
 */
function withHistory(
  history: Float32Array,
  historyRows: number,
  x: Float32Array,
  rows: number,
  channels: number,
  scratch: ScratchArena,
): Float32Array {
  const paddedRows = historyRows + rows;
  const padded = scratch.take(channels * paddedRows);
  for (let channel = 0; channel < channels; channel++) {
    padded.set(history.subarray(channel * historyRows, (channel + 1) * historyRows), channel * paddedRows);
    padded.set(x.subarray(channel * rows, (channel + 1) * rows), channel * paddedRows + historyRows);
  }
  for (let channel = 0; channel < channels; channel++) {
    const start = channel * paddedRows + rows;
    history.set(padded.subarray(start, start + historyRows), channel * historyRows);
  }
  return padded;
}

/** Left-padded causal conv: output row n reads inputs n·s − (span − s) … n·s + span − s − 1 (span = (K−1)·d + 1). */
export class CausalConv {
  private readonly inputs: number;
  private readonly outputs: number;
  private readonly kernel: number;
  private readonly dilation: number;
  private readonly stride: number;
  private readonly depthwise: boolean;
  /** Rows of earlier input kept for the next chunk. [Cin, historyRows] */
  private readonly history: Float32Array;
  private readonly historyRows: number;

  constructor(
    shape: ConvShape,
    private readonly weight: Float32Array,
    private readonly bias: Float32Array,
  ) {
    this.inputs = shape.inputs;
    this.outputs = shape.outputs;
    this.kernel = shape.kernel;
    this.dilation = shape.dilation ?? 1;
    this.stride = shape.stride ?? 1;
    this.depthwise = shape.depthwise ?? false;
    this.historyRows = (this.kernel - 1) * this.dilation + 1 - this.stride;
    this.history = new Float32Array(this.inputs * this.historyRows);
  }

  /** x [Cin, rows] → [Cout, rows / stride]; rows must be a multiple of the stride. */
  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const { inputs, outputs, kernel, dilation, stride, historyRows } = this;
    const paddedRows = historyRows + rows;
    const padded = withHistory(this.history, historyRows, x, rows, inputs, scratch);
    const outputRows = rows / stride;
    const out = scratch.take(outputs * outputRows);
    const sums = scratch.takeDouble(Math.min(outputRows, TILE_ROWS));
    const partial = scratch.takeDouble(Math.min(outputRows, TILE_ROWS));
    // Tiles of output rows keep the accumulators in cache; every output still sums its inputs in the same order.
    for (let tileStart = 0; tileStart < outputRows; tileStart += TILE_ROWS) {
      const tileRows = Math.min(TILE_ROWS, outputRows - tileStart);
      for (let output = 0; output < outputs; output++) {
        sums.fill(this.bias[output]!, 0, tileRows);
        const firstInput = this.depthwise ? output : 0;
        const lastInput = this.depthwise ? output + 1 : inputs;
        for (let input = firstInput; input < lastInput; input++) {
          const weightBase = (this.depthwise ? output : output * inputs + input) * kernel;
          const base = input * paddedRows + tileStart * stride;
          accumulateTaps(this.weight, weightBase, kernel, padded, base, dilation, stride, tileRows, sums, partial);
        }
        const target = output * outputRows + tileStart;
        for (let row = 0; row < tileRows; row++) out[target + row] = sums[row]!;
      }
    }
    return out;
  }
}

/**
 * Causal transposed conv with kernel K = m·s, the last K − s outputs trimmed: output row n·s + j sums
 * w[i, o, j + q·s] · x[i, n − q] over q < m, so it keeps the last m − 1 input rows.
 */
export class CausalTransposedConv {
  private readonly overlap: number;
  private readonly history: Float32Array;

  constructor(
    private readonly inputs: number,
    private readonly outputs: number,
    private readonly kernel: number,
    private readonly stride: number,
    private readonly weight: Float32Array,
    private readonly bias: Float32Array,
  ) {
    this.overlap = Math.ceil(kernel / stride) - 1;
    this.history = new Float32Array(inputs * this.overlap);
  }

  /** x [Cin, rows] → [Cout, rows · stride]. */
  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const { inputs, outputs, kernel, stride, overlap } = this;
    const paddedRows = overlap + rows;
    const padded = withHistory(this.history, overlap, x, rows, inputs, scratch);
    const outputRows = rows * stride;
    const out = scratch.take(outputs * outputRows);
    const tileInputRows = Math.max(1, Math.floor(TILE_ROWS / stride));
    const sums = scratch.takeDouble(Math.min(rows, tileInputRows) * stride);
    // Tiles of input rows keep the accumulators in cache; every output still sums its taps in the same order.
    for (let tileStart = 0; tileStart < rows; tileStart += tileInputRows) {
      const tileRows = Math.min(tileInputRows, rows - tileStart);
      for (let output = 0; output < outputs; output++) {
        sums.fill(this.bias[output]!, 0, tileRows * stride);
        for (let input = 0; input < inputs; input++) {
          const weightBase = (input * outputs + output) * kernel;
          for (let tap = 0; tap < kernel; tap++) {
            const value = this.weight[weightBase + tap]!;
            const phase = tap % stride;
            const lag = (tap - phase) / stride;
            const base = input * paddedRows + overlap - lag + tileStart;
            for (let row = 0; row < tileRows; row++) sums[row * stride + phase]! += value * padded[base + row]!;
          }
        }
        const target = output * outputRows + tileStart * stride;
        for (let row = 0; row < tileRows * stride; row++) out[target + row] = sums[row]!;
      }
    }
    return out;
  }
}

/** Snake: x + sin²(αx) / (α + 1e-9), per channel α (the reciprocal taken in float32, as PyTorch does). */
export class Snake {
  private readonly inverse: Float32Array;

  constructor(private readonly alpha: Float32Array) {
    this.inverse = alpha.map((value) => 1 / Math.fround(value + 1e-9));
  }

  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const out = scratch.take(x.length);
    const channels = x.length / rows;
    for (let channel = 0; channel < channels; channel++) {
      const alpha = this.alpha[channel]!;
      const inverse = this.inverse[channel]!;
      for (let index = channel * rows; index < (channel + 1) * rows; index++) {
        const value = x[index]!;
        const sine = Math.sin(Math.fround(alpha * value));
        out[index] = value + inverse * sine * sine;
      }
    }
    return out;
  }
}

/** Residual unit: x + conv1(snake(conv7_dilated(snake(x)))), all causal. */
export class ResidualUnit {
  constructor(
    private readonly firstSnake: Snake,
    private readonly dilatedConv: CausalConv,
    private readonly secondSnake: Snake,
    private readonly pointwiseConv: CausalConv,
  ) {}

  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    let y = this.firstSnake.forward(x, rows, scratch);
    y = this.dilatedConv.forward(y, rows, scratch);
    y = this.secondSnake.forward(y, rows, scratch);
    y = this.pointwiseConv.forward(y, rows, scratch);
    const out = scratch.take(x.length);
    for (let index = 0; index < x.length; index++) out[index] = x[index]! + y[index]!;
    return out;
  }
}
