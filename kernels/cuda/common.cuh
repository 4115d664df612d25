// Device functions the kernels share: bf16 <-> fp32 (round to nearest even), fixed-order warp and block reductions
// (so sums come out bit-identical on every run), and SiLU. Kernels include this; it holds no kernels itself.
#pragma once
#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

// Programmatic dependent launch: every launch carries the programmatic-serialization attribute, so a kernel's blocks
// may start while the previous kernel still runs. Every kernel therefore begins with KERNEL_PROLOGUE(): let the next
// kernel launch, then wait until everything before this one has finished and its writes are visible. A kernel that
// reads only weights first may wait later (the GEMMs, the norms, the fused q|k|v prepare), but waits before any other
// load and before any early return.
// One exception: attention's spread blocks with no keys to walk read the host-written row table and return unwaited,
// while block z = 0 always waits (attention.cuh, attention_block_idle, says why that keeps the chain ordered).
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_previous_grids() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#define KERNEL_PROLOGUE()       \
  do {                          \
    allow_dependent_launch();   \
    wait_for_previous_grids();  \
  } while (0)

__device__ __forceinline__ float to_float(bf16 value) { return __bfloat162float(value); }
__device__ __forceinline__ bf16 to_bf16(float value) { return __float2bfloat16_rn(value); }

// A butterfly over the warp: every lane ends with the same sum, added in the same order each run.
__device__ __forceinline__ float warp_sum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Sum over a block of up to 1024 threads (a multiple of 32); every thread gets the total. `scratch` holds 32 floats.
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  value = warp_sum(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(total);
}

// SiLU in fp32 with IEEE semantics: silu(-inf) = NaN (as -inf / inf), silu(+inf) = +inf, NaN stays NaN.
__device__ __forceinline__ float silu(float value) { return value / (1.0f + expf(-value)); }
