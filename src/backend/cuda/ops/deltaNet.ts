// Launchers for kernels/cuda/delta_net.cu (its header has the formulas and layouts): the causal conv + SiLU with
// carried conv state, the beta/g gates, and the delta-rule recurrence with fp32 state, all over LAYOUT.md's
// sequence table (int32 [Q, 4] = slot, firstRow, rowCount, startPosition) and per-slot slabs. The grid depends on the
// sizes only; every element is computed the same way whatever the call holds.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const CONV_KERNEL: KernelName = { family: 'delta_net', name: 'delta_net_conv_silu_bf16' };
const GATES_KERNEL: KernelName = { family: 'delta_net', name: 'delta_net_gates_f32' };
const GATES_BF16_PARAMETERS_KERNEL: KernelName = { family: 'delta_net', name: 'delta_net_gates_bf16_parameters' };
const RECURRENCE_KERNEL: KernelName = { family: 'delta_net', name: 'delta_net_recurrence_bf16' };

/** The conv kernel's width (the model's), the heads' dimension and the kernels' fixed thread shapes. */
export const DELTA_NET_CONV_WIDTH = 4;
export const DELTA_NET_HEAD_DIM = 128;
const CONV_THREADS = 256;
const CONV_ROWS_PER_TILE = 8;
const GATE_THREADS = 256;
const RECURRENCE_THREADS = 128;
const RECURRENCE_COLUMN_GROUPS = 4;
const MAXIMUM_GRID_Y = 65535;

export interface DeltaNetConvArguments {
  readonly out: DevicePointer;
  /** Elements between rows of out (≥ channels). */
  readonly outRowStride: number;
  /** The q|k|v columns of the fused projection's first row. */
  readonly x: DevicePointer;
  /** Elements between rows of x (the projection's width). */
  readonly xRowStride: number;
  readonly weight: DevicePointer;
  /** [S, 3, channels] bf16, read at each sequence's start and written at its end. */
  readonly convState: DevicePointer;
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  /** Rows of the longest sequence in the call (bounds the grid; a longer one is still walked whole). */
  readonly longestSequence: number;
  readonly channels: number;
}

function requireStride(stride: number, name: string, atLeast: number): void {
  requireCount(stride, name, atLeast, 2 ** 40);
}

export function deltaNetConv(cuda: CudaContext, a: DeltaNetConvArguments, options: LaunchOptions = {}): void {
  requireCount(a.channels, 'channels');
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.longestSequence, 'longestSequence');
  requireStride(a.outRowStride, 'outRowStride', a.channels);
  requireStride(a.xRowStride, 'xRowStride', a.channels);
  const args = new KernelArguments()
    .pointer(a.out)
    .int64(a.outRowStride)
    .pointer(a.x)
    .int64(a.xRowStride)
    .pointer(a.weight)
    .pointer(a.convState)
    .pointer(a.sequences)
    .int32(a.channels);
  const rowTiles = Math.min(MAXIMUM_GRID_Y, Math.ceil(a.longestSequence / CONV_ROWS_PER_TILE));
  const grid = [Math.ceil(a.channels / CONV_THREADS), rowTiles, a.sequenceCount] as const;
  launch(cuda, CONV_KERNEL, { grid, block: [CONV_THREADS, 1, 1] }, args, options);
}

export interface DeltaNetGatesArguments {
  readonly g: DevicePointer;
  readonly beta: DevicePointer;
  /** Column b[0] of the projection's first row (value heads contiguous). */
  readonly b: DevicePointer;
  /** Column a[0] of the projection's first row. */
  readonly a: DevicePointer;
  /** Elements between rows of b and a. */
  readonly rowStride: number;
  /** [valueHeads], of parameterDtype. */
  readonly aLog: DevicePointer;
  /** [valueHeads], of parameterDtype. */
  readonly dtBias: DevicePointer;
  /** How aLog and dtBias are stored (the checkpoint's dtype); fp32 when left out. */
  readonly parameterDtype?: 'f32' | 'bf16';
  readonly rows: number;
  readonly valueHeads: number;
}

export function deltaNetGates(cuda: CudaContext, a: DeltaNetGatesArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.valueHeads, 'valueHeads');
  requireStride(a.rowStride, 'rowStride', a.valueHeads);
  requireCount(a.rows * a.valueHeads, 'rows × valueHeads');
  const args = new KernelArguments()
    .pointer(a.g)
    .pointer(a.beta)
    .pointer(a.b)
    .pointer(a.a)
    .int64(a.rowStride)
    .pointer(a.aLog)
    .pointer(a.dtBias)
    .int32(a.rows)
    .int32(a.valueHeads);
  const grid = [Math.ceil((a.rows * a.valueHeads) / GATE_THREADS), 1, 1] as const;
  const kernel = a.parameterDtype === 'bf16' ? GATES_BF16_PARAMETERS_KERNEL : GATES_KERNEL;
  launch(cuda, kernel, { grid, block: [GATE_THREADS, 1, 1] }, args, options);
}

export interface DeltaNetRecurrenceArguments {
  /** [T, valueHeads, 128] bf16. */
  readonly out: DevicePointer;
  /** The conv output's first row: q [keyHeads, 128] | k [keyHeads, 128] | v [valueHeads, 128]; 4-byte aligned. */
  readonly qkv: DevicePointer;
  /** Elements between rows: even, at least (2·keyHeads + valueHeads)·128. */
  readonly qkvRowStride: number;
  /** [T, valueHeads] fp32 each. */
  readonly g: DevicePointer;
  readonly beta: DevicePointer;
  /** [S, valueHeads, 128, 128] fp32. */
  readonly state: DevicePointer;
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  readonly keyHeads: number;
  readonly valueHeads: number;
}

export function deltaNetRecurrence(
  cuda: CudaContext,
  a: DeltaNetRecurrenceArguments,
  options: LaunchOptions = {},
): void {
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.keyHeads, 'keyHeads');
  requireCount(a.valueHeads, 'valueHeads', 1, 65535);
  if (a.valueHeads % a.keyHeads !== 0) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `valueHeads (${a.valueHeads}) must be a multiple of keyHeads (${a.keyHeads})`,
      { kind: 'internal', param: 'valueHeads' },
    );
  }
  requireStride(a.qkvRowStride, 'qkvRowStride', (2 * a.keyHeads + a.valueHeads) * DELTA_NET_HEAD_DIM);
  // The kernel reads q, k and v as bf16 pairs: rows and the first row must sit on 4-byte boundaries.
  if (a.qkvRowStride % 2 !== 0 || a.qkv % 4n !== 0n) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `qkv rows must be 4-byte aligned: got row stride ${a.qkvRowStride} elements at address ${a.qkv}`,
      { kind: 'internal', param: 'qkvRowStride' },
    );
  }
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.qkv)
    .int64(a.qkvRowStride)
    .pointer(a.g)
    .pointer(a.beta)
    .pointer(a.state)
    .pointer(a.sequences)
    .int32(a.keyHeads)
    .int32(a.valueHeads);
  const grid = [RECURRENCE_COLUMN_GROUPS, a.valueHeads, a.sequenceCount] as const;
  launch(cuda, RECURRENCE_KERNEL, { grid, block: [RECURRENCE_THREADS, 1, 1] }, args, options);
}
