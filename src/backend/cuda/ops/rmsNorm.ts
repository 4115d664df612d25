// Launchers for kernels/cuda/rms_norm.cu. x, out: [rows, cols] bf16 (out may alias x, except after a residual add);
// weight: [cols] bf16 or f32 (read as stored); gate (gated form), source (residual add): [rows, cols] bf16. One block
// per row. The tower input norms a gathered code row and an input row into the two halves of one output row.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';
import { requireCodeColumn } from './records.ts';

export type NormWeightDtype = 'bf16' | 'f32';

const RMS_NORM_KERNEL: Record<NormWeightDtype, KernelName> = {
  bf16: { family: 'rms_norm', name: 'rms_norm_bf16' },
  f32: { family: 'rms_norm', name: 'rms_norm_f32_weight_bf16' },
};
const ADD_RMS_NORM_KERNEL: Record<NormWeightDtype, KernelName> = {
  bf16: { family: 'rms_norm', name: 'add_rms_norm_bf16' },
  f32: { family: 'rms_norm', name: 'add_rms_norm_f32_weight_bf16' },
};
const TOWER_INPUT_KERNEL: Record<NormWeightDtype, KernelName> = {
  bf16: { family: 'rms_norm', name: 'tower_input_bf16' },
  f32: { family: 'rms_norm', name: 'tower_input_f32_weight_bf16' },
};
const GATED_RMS_NORM_KERNEL: Record<NormWeightDtype, KernelName> = {
  bf16: { family: 'rms_norm', name: 'rms_norm_gated_bf16' },
  f32: { family: 'rms_norm', name: 'rms_norm_gated_f32_weight_bf16' },
};

export interface RmsNormArguments {
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  readonly weight: DevicePointer;
  /** The weight's dtype (default bf16). */
  readonly weightDtype?: NormWeightDtype;
  readonly rows: number;
  readonly cols: number;
  readonly eps: number;
}

function weightDtype(a: { readonly weightDtype?: NormWeightDtype }): NormWeightDtype {
  const dtype = a.weightDtype ?? 'bf16';
  if (dtype !== 'bf16' && dtype !== 'f32') {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `norm weights must be bf16 or f32, got ${String(dtype)}`, {
      kind: 'internal',
      param: 'weightDtype',
    });
  }
  return dtype;
}

/** Threads a norm launch gives a row of `cols` (four columns a thread): its sum of squares' order depends on it. */
function normThreads(cols: number): number {
  return roundUpToWarp(Math.ceil(cols / 4));
}

function shape(rows: number, cols: number) {
  return { grid: [rows, 1, 1], block: [normThreads(cols), 1, 1] } as const;
}

/** Zero-centred (`x·r·(1+w)`, the Qwen3.5 layers) when `zeroCentred`, else plain (`x·r·w`). */
export function rmsNorm(
  cuda: CudaContext,
  a: RmsNormArguments & { readonly zeroCentred: boolean },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.weight)
    .int32(a.rows)
    .int32(a.cols)
    .float32(a.eps)
    .int32(a.zeroCentred ? 1 : 0);
  launch(cuda, RMS_NORM_KERNEL[weightDtype(a)], shape(a.rows, a.cols), args, options);
}

/** The Gated DeltaNet output norm: `x·r·w·silu(gate)`. */
export function gatedRmsNorm(
  cuda: CudaContext,
  a: RmsNormArguments & { readonly gate: DevicePointer },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.gate)
    .pointer(a.weight)
    .int32(a.rows)
    .int32(a.cols)
    .float32(a.eps);
  launch(cuda, GATED_RMS_NORM_KERNEL[weightDtype(a)], shape(a.rows, a.cols), args, options);
}

/**
 * The residual add and the zero-centred norm after it, in one launch: `x = bf16(x + source)`, then
 * `out = bf16(x·r·(1+w))` from the rounded x (the bits of addInPlace then rmsNorm). `out` must not alias `x`.
 */
export function addRmsNorm(
  cuda: CudaContext,
  a: RmsNormArguments & { readonly source: DevicePointer },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  if (a.out === a.x) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', 'the norm after a residual add cannot write over the residual', {
      kind: 'internal',
      param: 'out',
    });
  }
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.source)
    .pointer(a.weight)
    .int32(a.rows)
    .int32(a.cols)
    .float32(a.eps);
  launch(cuda, ADD_RMS_NORM_KERNEL[weightDtype(a)], shape(a.rows, a.cols), args, options);
}

export interface TowerInputArguments {
  /** [rows, codeCols + inputCols] bf16; overlaps no input. */
  readonly out: DevicePointer;
  /** [codeRows, codeCols] bf16. */
  readonly codeTable: DevicePointer;
  readonly codeRows: number;
  readonly codeCols: number;
  /** int32 [rows, width] frame records; the code is records[t][1 + codebook], masked where below 0. */
  readonly records: DevicePointer;
  readonly width: number;
  readonly codebook: number;
  readonly codeFirstRow: number;
  /** enorm, [codeCols]. */
  readonly codeWeight: DevicePointer;
  /** [rows, inputCols] bf16. */
  readonly input: DevicePointer;
  readonly inputCols: number;
  /** hnorm, [inputCols]. */
  readonly inputWeight: DevicePointer;
  /** Both weights' dtype (default bf16). */
  readonly weightDtype?: NormWeightDtype;
  readonly rows: number;
  readonly eps: number;
}

/**
 * The tower layer's input: out[t] = [zero-centred norm of the code row | zero-centred norm of input[t]], the bits of
 * gatherCodes, rmsNorm of each half and concatenateColumns. Each half is normed by the threads its own rmsNorm launch
 * would have (the block has the larger count), so its sum of squares is added in that launch's order.
 */
export function towerInput(cuda: CudaContext, a: TowerInputArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.codeCols, 'codeCols');
  requireCount(a.inputCols, 'inputCols');
  requireCount(a.codeRows, 'codeRows');
  requireCodeColumn(a);
  requireCount(a.rows * (a.codeCols + a.inputCols), 'rows × (codeCols + inputCols)');
  const dtype = weightDtype(a);
  const codeThreads = normThreads(a.codeCols);
  const inputThreads = normThreads(a.inputCols);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.codeTable)
    .pointer(a.records)
    .int32(a.width)
    .int32(a.codebook)
    .int32(a.codeFirstRow)
    .int32(a.codeRows)
    .pointer(a.codeWeight)
    .pointer(a.input)
    .pointer(a.inputWeight)
    .int32(a.rows)
    .int32(a.codeCols)
    .int32(a.inputCols)
    .int32(codeThreads)
    .int32(inputThreads)
    .float32(a.eps);
  const shape = { grid: [a.rows, 1, 1], block: [Math.max(codeThreads, inputThreads), 1, 1] } as const;
  launch(cuda, TOWER_INPUT_KERNEL[dtype], shape, args, options);
}
