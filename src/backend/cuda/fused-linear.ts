// The block context's fused linear: several projections of the same x (DeltaNet's qkv, z, b, a; attention's q, k, v;
// SwiGLU's gate and up) as segmented GEMMs of up to GEMM_MOST_SEGMENTS each, one launch (and at most one combine)
// per group instead of a GEMM and a combine per projection. Each output has the bits of its own linear.
import { DramaError } from '../../errors.ts';
import type { LinearWeight } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { DevicePointer } from './driver.ts';
import {
  GEMM_MOST_SEGMENTS,
  gemmSegments,
  gemmSegmentsCombine,
  gemmSegmentsWorkspaceBytes,
  type LeftCombine,
} from './ops/gemmSegments.ts';
import type { CudaBuffer } from './tensors.ts';

export interface LinearSegment {
  readonly weight: LinearWeight<CudaBuffer>;
  /** [rows, weight.shape[0]]: bf16 (one rounding), or f32 (the fp32 sum) when `output` is 'f32'. */
  readonly out: CudaBuffer;
  readonly output?: 'bf16' | 'f32';
}

function invalid(code: string, message: string, param?: string): DramaError {
  return new DramaError(code, message, { kind: 'internal', param });
}

function requireElements(buffer: CudaBuffer, count: number, name: string): void {
  if (buffer.elements < count) {
    throw invalid('TENSOR_TOO_SMALL', `${name} holds ${buffer.elements} elements, the op needs ${count}`);
  }
}

/** Checks every segment before anything is launched: one bad segment leaves every output untouched. */
function checkSegments(x: CudaBuffer, segments: readonly LinearSegment[], rows: number): number {
  if (segments.length === 0) throw invalid('LINEAR_SEGMENTS_INVALID', 'a fused linear needs at least one weight');
  if (x.dtype !== 'bf16') throw invalid('TENSOR_DTYPE_UNSUPPORTED', `linear input must be bf16, got ${x.dtype}`);
  const inFeatures = segments[0]!.weight.shape[1]!;
  segments.forEach(({ weight, out, output }, index) => {
    const name = `segments[${index}]`;
    if (weight.dtype !== 'bf16' || weight.shape.length !== 2) {
      throw invalid(
        'LINEAR_WEIGHT_DTYPE_UNSUPPORTED',
        `the cuda linear runs 2-d bf16 weights only, got ${weight.dtype} [${weight.shape.join(', ')}]`,
        name,
      );
    }
    if (weight.shape[1] !== inFeatures) {
      throw invalid(
        'TENSOR_SHAPE_MISMATCH',
        `a fused linear's weights share x: ${name} reads ${weight.shape[1]} features, segments[0] ${inFeatures}`,
        name,
      );
    }
    if (out.dtype !== (output ?? out.dtype) || (out.dtype !== 'bf16' && out.dtype !== 'f32')) {
      const wanted = output ?? 'bf16 or f32';
      throw invalid('TENSOR_DTYPE_UNSUPPORTED', `${name} output must be ${wanted}, got a ${out.dtype} buffer`, name);
    }
    requireElements(out, rows * weight.shape[0]!, `${name} output`);
  });
  requireElements(x, rows * inFeatures, 'linear input');
  return inFeatures;
}

/**
 * out_s = x · weight_sᵀ for every segment, GEMM_MOST_SEGMENTS to a launch. `workspace(bytes)` gives the shared split-K
 * scratch (sized for the largest split up to `splitRows` rows, so a later call of fewer rows never grows it).
 */
export function fusedLinear(
  cuda: CudaContext,
  workspace: (bytes: number) => DevicePointer,
  splitRows: number,
  x: CudaBuffer,
  segments: readonly LinearSegment[],
  rows: number,
): void {
  const inFeatures = checkSegments(x, segments, rows);
  for (let first = 0; first < segments.length; first += GEMM_MOST_SEGMENTS) {
    launchGroup(cuda, workspace, splitRows, x, inFeatures, segments.slice(first, first + GEMM_MOST_SEGMENTS), rows);
  }
}

/**
 * One segmented GEMM (up to GEMM_MOST_SEGMENTS segments) whose split-K combine the caller may run in its own form (a
 * SwiGLU's h, DeltaNet's conv and gates): where K splits, `combine` gets the left combine and returns true if it
 * launched one; otherwise (or where it returns false) gemm_segments_combine runs, and every output is written as
 * fusedLinear writes it. Returns whether `combine` ran the combine.
 */
export function fusedLinearCombinedBy(
  cuda: CudaContext,
  workspace: (bytes: number) => DevicePointer,
  splitRows: number,
  x: CudaBuffer,
  segments: readonly LinearSegment[],
  rows: number,
  combine: (left: LeftCombine) => boolean,
): boolean {
  const inFeatures = checkSegments(x, segments, rows);
  if (segments.length > GEMM_MOST_SEGMENTS) {
    throw invalid(
      'LINEAR_SEGMENTS_INVALID',
      `a linear combined by its caller is one launch of at most ${GEMM_MOST_SEGMENTS} segments, got ${segments.length}`,
    );
  }
  const left = launchGroup(cuda, workspace, splitRows, x, inFeatures, segments, rows, true);
  if (left === undefined) return false;
  if (combine(left)) return true;
  gemmSegmentsCombine(cuda, left);
  return false;
}

function launchGroup(
  cuda: CudaContext,
  workspace: (bytes: number) => DevicePointer,
  splitRows: number,
  x: CudaBuffer,
  inFeatures: number,
  group: readonly LinearSegment[],
  rows: number,
  leaveCombine = false,
): LeftCombine | undefined {
  const outFeatures = group.map((segment) => segment.weight.shape[0]!);
  const reserve = gemmSegmentsWorkspaceBytes(Math.min(rows, splitRows), inFeatures, outFeatures);
  return gemmSegments(
    cuda,
    {
      x: x.pointer,
      rows,
      inFeatures,
      workspace: reserve > 0 ? workspace(reserve) : undefined,
      segments: group.map(({ weight, out }) => ({
        y: out.pointer,
        w: weight.data.pointer,
        outFeatures: weight.shape[0]!,
        output: out.dtype === 'f32' ? 'f32' : 'bf16',
      })),
    },
    { leaveCombine },
  );
}
