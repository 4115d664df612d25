// Deliberately wrong expert re-layout for the kernel contract's controls (test/kernels/): moe_pack_rows
// (kernels/cuda/moe_pack.cu) with one planted fault. Never launched by the backend.
//   control_moe_pack_fragments_swapped   each 16-byte chunk holds its words 1 and 2 swapped (row g + 8 and the next
//                                        4 bytes of row g trade places: the mma fragment's k and m halves mixed up)
//                                                                                        (accuracy: bytes exact)
#include "common.cuh"

#define PACK_BLOCK_BYTES 2048
#define PACK_CHUNKS_PER_BLOCK (PACK_BLOCK_BYTES / 16)

extern "C" __global__ void control_moe_pack_fragments_swapped(uint8_t* target, const uint8_t* first,
                                                              const uint8_t* second, int row_bytes, int groups,
                                                              int interleaved) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const int blocks = row_bytes / 128;
  const long long chunks = (long long)groups * blocks * PACK_CHUNKS_PER_BLOCK;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < chunks;
       index += (long long)gridDim.x * blockDim.x) {
    const long long block_index = index / PACK_CHUNKS_PER_BLOCK;
    const int within = (int)(index - block_index * PACK_CHUNKS_PER_BLOCK);
    const int chunk = within >> 5;
    const int lane = within & 31;
    const int group = (int)(block_index / blocks);
    const int block = (int)(block_index - (long long)group * blocks);
    const int g = lane >> 2;
    const int column = block * 128 + 32 * (lane & 3) + 8 * chunk;
    unsigned words[4];
#pragma unroll
    for (int w = 0; w < 4; w++) {
      const int m = g + 8 * (w & 1);
      const uint8_t* row;
      if (!interleaved) row = first + (long long)(16 * group + m) * row_bytes;
      else if (m < 8) row = first + (long long)(8 * group + m) * row_bytes;
      else row = second + (long long)(8 * group + m - 8) * row_bytes;
      words[w] = *reinterpret_cast<const unsigned*>(row + column + 4 * (w >> 1));
    }
    reinterpret_cast<uint4*>(target)[index] = make_uint4(words[0], words[2], words[1], words[3]);
  }
}
