// Launchers for kernels/cuda/codec_transformer.cu (its header has the formulas and layouts): the codec's windowed
// transformer apart from its linears, over many lanes at once. RMSNorm, interleaved RoPE at absolute positions, the
// windowed attention over this call's rows and each lane's ring of keys and values, the ring update after it, and
// SwiGLU, all in the cpu transformer's fp64 arithmetic rounded once to fp32. Grids depend on the sizes only and every
// reduction's order on the row's position and the sizes, so a lane's rows do not depend on the chunk or its company.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type CodecCall, requireCall } from './codecConv.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';
import { allowShared } from './sharedLimit.ts';

const FAMILY = 'codec_transformer';
const RMS_NORM_KERNEL: KernelName = { family: FAMILY, name: 'codec_rms_norm' };
const ROPE_KERNEL: KernelName = { family: FAMILY, name: 'codec_rope' };
const ATTENTION_KERNEL: KernelName = { family: FAMILY, name: 'codec_window_attention' };
const RING_KERNEL: KernelName = { family: FAMILY, name: 'codec_ring_update' };
const SWIGLU_KERNEL: KernelName = { family: FAMILY, name: 'codec_swiglu' };

/** The kernels' fixed shapes (codec_transformer.cuh, codec_window_attention.cuh). */
const NORM_THREADS = 256;
const ATTENTION_THREADS = 256;
const ATTENTION_GROUP_ROWS = 16;
const ATTENTION_TILE_KEYS = 64;
const ROPE_ROWS = 4;
const RING_THREADS = 128;
const SWIGLU_THREADS = 256;
const MAXIMUM_GRID_Y = 65535;
const MAXIMUM_BLOCKS = 2 ** 31 - 1;
/**
 * Head sizes whose columns the attention's 256 threads hold two at most (64 a warp pair); windows whose fp64 scores
 * for 16 rows fit beside the queries and a key tile in the H200's 227 KiB of shared memory a block.
 */
export const CODEC_MAXIMUM_HEAD_DIM = 128;
export const CODEC_MAXIMUM_WINDOW = 1024;
/** qkv rows are 3·width floats: widths whose row offsets stay well inside int32 per row. */
const MAXIMUM_WIDTH = 2 ** 20;

const NULL_POINTER = 0n;

/** ropeBase ** (2i / headDim) for each pair i, the divisor transformer.ts applies to the position. */
export function codecRopeFrequencies(ropeBase: number, headDim: number): Float64Array {
  const frequencies = new Float64Array(headDim / 2);
  for (let pair = 0; pair < headDim / 2; pair++) frequencies[pair] = ropeBase ** ((2 * pair) / headDim);
  return frequencies;
}

/**
 * Dynamic shared bytes of the attention, all fp64: the scores of a group's 16 rows over the window + 15 keys they
 * span, their queries, and one tile of 64 keys padded by one (conflict-free reads).
 */
export function codecAttentionSharedBytes(headDim: number, window: number): number {
  const scores = (window + ATTENTION_GROUP_ROWS - 1) * ATTENTION_GROUP_ROWS;
  return (scores + headDim * ATTENTION_GROUP_ROWS + ATTENTION_TILE_KEYS * (headDim + 1)) * 8;
}

function invalid(param: string, message: string): DramaError {
  return new DramaError('KERNEL_ARGUMENT_INVALID', message, { kind: 'internal', param });
}

/** Heads of an even head size within the kernels' limits; returns width = heads · headDim. */
function requireHeads(heads: number, headDim: number): number {
  requireCount(heads, 'heads');
  requireCount(headDim, 'headDim', 2, CODEC_MAXIMUM_HEAD_DIM);
  if (headDim % 2 !== 0) throw invalid('headDim', `headDim must be even for RoPE pairs, got ${headDim}`);
  requireCount(heads * headDim, 'heads × headDim', 1, MAXIMUM_WIDTH);
  return heads * headDim;
}

function rowBlocks(a: CodecCall, rowsPerBlock: number): number {
  return Math.min(MAXIMUM_GRID_Y, Math.ceil((a.longestSequence * a.rowScale) / rowsPerBlock));
}

export interface CodecRmsNormArguments {
  /** [rows, width] fp32; must not alias x. */
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  /** [width] fp32. */
  readonly weight: DevicePointer;
  readonly rows: number;
  readonly width: number;
  readonly eps: number;
}

/** out[r, c] = x[r, c] · rsqrt(mean(x²) + eps) · weight[c], fp32 rows [rows, width]; out must not alias x. */
export function codecRmsNorm(cuda: CudaContext, a: CodecRmsNormArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows', 1, MAXIMUM_BLOCKS);
  requireCount(a.width, 'width');
  if (!(Number.isFinite(a.eps) && a.eps >= 0)) throw invalid('eps', `eps must be finite and ≥ 0, got ${a.eps}`);
  if (a.out === a.x) throw invalid('out', 'the codec RMSNorm cannot write over its input');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.weight)
    .int32(a.rows)
    .int32(a.width)
    .float64(a.eps);
  launch(cuda, RMS_NORM_KERNEL, { grid: [a.rows, 1, 1], block: [NORM_THREADS, 1, 1] }, args, options);
}

export interface CodecRopeArguments extends CodecCall {
  /** [T, 3·width] fp32, q and k rotated in place. */
  readonly qkv: DevicePointer;
  readonly heads: number;
  readonly headDim: number;
  /** f64 [headDim/2]: ropeBase ** (2i / headDim), computed on the host as transformer.ts does. */
  readonly frequencies: DevicePointer;
  /** f32 [tablePositions, headDim/2, 2] (cos, sin), or undefined with tablePositions 0. */
  readonly table?: DevicePointer;
  readonly tablePositions: number;
}

/**
 * Interleaved RoPE in place on q (columns 0..width) and k (width..2·width) of qkv [T, 3·width], width = heads·headDim,
 * each row at its absolute position, exactly as transformer.ts applyRope (products and difference in double, one
 * rounding to fp32): the checkpoint table where it covers the position, else cos/sin of position / frequency[i].
 */
export function codecRope(cuda: CudaContext, a: CodecRopeArguments, options: LaunchOptions = {}): void {
  requireCall(a);
  requireHeads(a.heads, a.headDim);
  requireCount(a.tablePositions, 'tablePositions', 0);
  if ((a.table === undefined) !== (a.tablePositions === 0)) {
    throw invalid('table', `a RoPE table needs its positions and positions need a table (${a.tablePositions} given)`);
  }
  const args = new KernelArguments()
    .pointer(a.qkv)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.heads)
    .int32(a.headDim)
    .pointer(a.frequencies)
    .pointer(a.table ?? NULL_POINTER)
    .int32(a.tablePositions);
  const grid = [1, rowBlocks(a, ROPE_ROWS), a.sequenceCount] as const;
  launch(cuda, ROPE_KERNEL, { grid, block: [roundUpToWarp(a.headDim / 2), ROPE_ROWS, 1] }, args, options);
}

export interface CodecWindowAttentionArguments extends CodecCall {
  /** [T, width] fp32. */
  readonly out: DevicePointer;
  /** [T, 3·width] fp32, q and k already rotated. */
  readonly qkv: DevicePointer;
  /** f32 [S, window, width] each, ring-indexed by position % window. */
  readonly keys: DevicePointer;
  readonly values: DevicePointer;
  readonly heads: number;
  readonly headDim: number;
  readonly window: number;
}

/**
 * out [T, width]: each row's attention over positions max(0, p − window + 1) … p, ascending: positions ≥ the
 * sequence's start read this call's rotated k/v rows of qkv, earlier ones the slot's ring (position % window).
 * Scores, softmax and the weighted sum in fp64 as transformer.ts attend does, one rounding to fp32. Never writes the ring.
 */
export function codecWindowAttention(
  cuda: CudaContext,
  a: CodecWindowAttentionArguments,
  options: LaunchOptions = {},
): void {
  requireCall(a);
  requireHeads(a.heads, a.headDim);
  requireCount(a.window, 'window', 1, CODEC_MAXIMUM_WINDOW);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.qkv)
    .pointer(a.keys)
    .pointer(a.values)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.heads)
    .int32(a.headDim)
    .int32(a.window);
  const sharedBytes = codecAttentionSharedBytes(a.headDim, a.window);
  const shape = {
    grid: [a.heads, rowBlocks(a, ATTENTION_GROUP_ROWS), a.sequenceCount] as const,
    block: [ATTENTION_THREADS, 1, 1] as const,
    sharedBytes,
  };
  // All of L1 as shared memory: at the encoder's window two blocks fit an SM only so (its data all live in shared).
  allowShared(cuda, ATTENTION_KERNEL, options, sharedBytes, 100);
  launch(cuda, ATTENTION_KERNEL, shape, args, options);
}

export interface CodecRingUpdateArguments extends CodecCall {
  /** f32 [S, window, width] each, updated in place. */
  readonly keys: DevicePointer;
  readonly values: DevicePointer;
  /** [T, 3·width] fp32, k and v rows as the attention read them. */
  readonly qkv: DevicePointer;
  readonly heads: number;
  readonly headDim: number;
  readonly window: number;
}

/** After the attention: each sequence's last min(rows, window) rotated k and v rows of qkv into its slot's ring. */
export function codecRingUpdate(cuda: CudaContext, a: CodecRingUpdateArguments, options: LaunchOptions = {}): void {
  requireCall(a);
  const width = requireHeads(a.heads, a.headDim);
  requireCount(a.window, 'window', 1, CODEC_MAXIMUM_WINDOW);
  const args = new KernelArguments()
    .pointer(a.keys)
    .pointer(a.values)
    .pointer(a.qkv)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.heads)
    .int32(a.headDim)
    .int32(a.window);
  const keptRows = Math.min(a.window, a.longestSequence * a.rowScale);
  const grid = [Math.ceil(width / RING_THREADS), Math.min(MAXIMUM_GRID_Y, keptRows), a.sequenceCount] as const;
  launch(cuda, RING_KERNEL, { grid, block: [RING_THREADS, 1, 1] }, args, options);
}

export interface CodecSwiGluArguments {
  /** [rows, intermediate] fp32. */
  readonly out: DevicePointer;
  /** [rows, 2·intermediate] fp32 = [gate | up] per row. */
  readonly gateUp: DevicePointer;
  readonly rows: number;
  readonly intermediate: number;
}

/** out [rows, intermediate] = fround(silu(gate)) · up, gateUp [rows, 2·intermediate] = [gate | up] per row. */
export function codecSwiGlu(cuda: CudaContext, a: CodecSwiGluArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.intermediate, 'intermediate');
  requireCount(a.rows * a.intermediate, 'rows × intermediate', 1, 2 ** 40);
  const args = new KernelArguments().pointer(a.out).pointer(a.gateUp).int64(a.rows).int32(a.intermediate);
  const blocks = Math.min(MAXIMUM_BLOCKS, Math.ceil((a.rows * a.intermediate) / SWIGLU_THREADS));
  launch(cuda, SWIGLU_KERNEL, { grid: [blocks, 1, 1], block: [SWIGLU_THREADS, 1, 1] }, args, options);
}
