// Synthetic weights drawn on the device, bit for bit the values `synth` writes (src/synth/init.ts, random.ts), so a
// model built in device memory without files holds the checkpoint's numbers. Element i of a tensor draws
//   bits(i) = mix32(mix32(i ^ key_low) ^ key_high)   (lowbias32; the keys hash the seed and the tensor's name)
//   u(i)    = (bits(i) + 0.5) / 2^32                 (exact in fp64)
// synth_fill_bf16:         bf16(fp32(low + width · u(first + i)))        fp64 multiply then add, each rounded once
// synth_fill_e4m3:         pair p of bytes = table[bits(p) & 0xffff], table[bits(p) >> 16]   (the uniform code table)
// synth_fill_block_scales: fp32(half_width · fp32(low + width · u(i)) / divisor)
// The fp64 steps use _rn intrinsics so that nvcc cannot fuse them into an FMA the host arithmetic does not do.
// CPU reference: src/synth/device-init.ts.
#include <stdint.h>
#include "common.cuh"

__device__ __forceinline__ uint32_t mix32(uint32_t value) {
  value ^= value >> 16;
  value *= 0x21f0aaadu;
  value ^= value >> 15;
  value *= 0x735a2d97u;
  value ^= value >> 15;
  return value;
}

__device__ __forceinline__ uint32_t stream_bits(uint32_t index, uint32_t key_low, uint32_t key_high) {
  return mix32(mix32(index ^ key_low) ^ key_high);
}

__device__ __forceinline__ double stream_value(uint32_t index, uint32_t key_low, uint32_t key_high, double low,
                                               double width) {
  const double uniform = ((double)stream_bits(index, key_low, key_high) + 0.5) * (1.0 / 4294967296.0);
  return __dadd_rn(low, __dmul_rn(width, uniform));
}

// fp32 → bf16 round to nearest even, as float32ToBf16Bits (the values here are finite).
__device__ __forceinline__ uint16_t bf16_bits(float value) {
  const uint32_t bits = __float_as_uint(value);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

extern "C" __global__ void synth_fill_bf16(uint16_t* out, uint32_t first, uint32_t count, uint32_t key_low,
                                           uint32_t key_high, double low, double width) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double value = stream_value(first + i, key_low, key_high, low, width);
    out[i] = bf16_bits(__double2float_rn(value));
  }
}

// out must be 16-byte aligned; 16-byte chunks (8 pairs) are stored whole, the tail (count % 16 bytes) byte by byte.
extern "C" __global__ void synth_fill_e4m3(uint8_t* out, uint32_t count, uint32_t key_low, uint32_t key_high,
                                           const uint8_t* __restrict__ table) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const uint32_t chunks = count / 16;
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t chunk = thread; chunk < chunks; chunk += stride) {
    uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; w++) {
      const uint32_t a = stream_bits(chunk * 8 + 2 * w, key_low, key_high);
      const uint32_t b = stream_bits(chunk * 8 + 2 * w + 1, key_low, key_high);
      words[w] = (uint32_t)__ldg(table + (a & 0xffffu)) | ((uint32_t)__ldg(table + (a >> 16)) << 8) |
                 ((uint32_t)__ldg(table + (b & 0xffffu)) << 16) | ((uint32_t)__ldg(table + (b >> 16)) << 24);
    }
    reinterpret_cast<uint4*>(out)[chunk] = make_uint4(words[0], words[1], words[2], words[3]);
  }
  for (uint32_t i = chunks * 16 + thread; i < count; i += stride) {
    const uint32_t bits = stream_bits(i >> 1, key_low, key_high);
    out[i] = __ldg(table + ((i & 1u) ? (bits >> 16) : (bits & 0xffffu)));
  }
}

extern "C" __global__ void synth_fill_block_scales(float* out, uint32_t count, uint32_t key_low, uint32_t key_high,
                                                   double low, double width, double half_width, double divisor) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float factor = __double2float_rn(stream_value(i, key_low, key_high, low, width));
    out[i] = __double2float_rn(__ddiv_rn(__dmul_rn(half_width, (double)factor), divisor));
  }
}
