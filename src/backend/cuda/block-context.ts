// What the cuda backend's block modules (attention, Gated DeltaNet, MoE, SwiGLU) share: the device, the named
// scratch, the backend's linear (one GEMM path for every projection) and its fused form, and a cache of weights re-laid out for a kernel
// (made on first use, which plan reaches, and kept as long as the weights object lives).
import type { LinearWeight, Tensor } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { LinearSegment } from './fused-linear.ts';
import type { LeftCombine } from './ops/gemmSegments.ts';
import type { DeviceScratch } from './scratch.ts';
import type { CudaBuffer } from './tensors.ts';

export interface BlockContext {
  readonly cuda: CudaContext;
  readonly scratch: DeviceScratch;
  /** out [rows, weight.shape[0]] bf16 = x [rows, weight.shape[1]] bf16 · weightᵀ (or f32 with output 'f32'). */
  linear(x: CudaBuffer, weight: LinearWeight<CudaBuffer>, out: CudaBuffer, rows: number): void;
  /**
   * Every segment's out = x · weightᵀ, as `linear` would give it bit for bit, in one GEMM launch per four segments
   * (the projections that read the same x). The weights must share x's features.
   */
  linears(x: CudaBuffer, segments: readonly LinearSegment[], rows: number): void;
  /**
   * `linears` for one launch's segments (at most four) whose split-K combine the caller may run itself: `combine`
   * gets it where K splits and returns true if it launched one, false to have the GEMM's own combine run. Returns
   * whether `combine` ran it.
   */
  linearsCombinedBy(
    x: CudaBuffer,
    segments: readonly LinearSegment[],
    rows: number,
    combine: (left: LeftCombine) => boolean,
  ): boolean;
  /** The value made by `make` for `key` (a weights object) the first time it is asked for, the same one after. */
  prepared<T>(key: object, label: string, make: () => T): T;
  /** Counts an allocation made outside the scratch (prepared weights), so that plan's zero-allocation check sees it. */
  countAllocation(): void;
  /**
   * Frees loaded weights (and their scales) that a prepared copy has replaced, once the queued work reading them is
   * done (one wait for all): the routed experts, re-laid out for the grouped kernels, would otherwise sit in device
   * memory twice. The tensors must not be read again.
   */
  releaseWeights(tensors: readonly Tensor<CudaBuffer>[]): void;
}
