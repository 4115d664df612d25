// Re-lays experts' weight rows on the device into the grouped expert GEMMs' fragment layout
// (src/backend/cuda/moeWeights.ts; reference there: packGateUpFp8, packDownFp8, packGateUpBf16, packDownBf16), every
// expert of a block in one launch (grid y = expert), so a layer's packing is a few launches, not hundreds.
//   target: expert e's place at target + e·target_stride: [groups, row_bytes/128 blocks, 2048 bytes]
//   sources: [experts, 2] int64 byte offsets from base of expert e's first and second rows
//   first, second: [rows, row_bytes] source rows (e4m3 bytes, or bf16 words as bytes: a row is 128-byte blocks
//                  either way); interleaved (gate|up): mma row m of group r is first row 8r + m for m < 8, second
//                  row 8r + m − 8 for m ≥ 8; else (down): first row 16r + m
// A 2048-byte block is 16 rows × 128 bytes. Lane L's chunk c (16 bytes at (c·32 + L)·16) holds words w = 0..3:
// row g + 8·(w & 1) (g = L >> 2), bytes 32·(L & 3) + 8c + 4·(w >> 1) .. + 3 of the block's 128 bytes of that row.
// The e4m3 and the bf16 layouts are this same byte map (moeWeights.ts spells both out element by element).
// One thread per 16-byte chunk; nothing is summed, so the bytes are exact whatever the launch shape.
// moe_gather_words: target[i·words + w] = word w of the 4-byte words at base + offsets[i] (grid y = i): the experts'
// block scales laid end to end in one launch.
#include "common.cuh"

#define PACK_BLOCK_BYTES 2048
#define PACK_CHUNKS_PER_BLOCK (PACK_BLOCK_BYTES / 16)

// The contract's control (kernels/controls/moe_pack_controls.cu) compiles this file under another name with a fault.
#ifndef MOE_PACK_ENTRY
#define MOE_PACK_ENTRY moe_pack_rows
#define MOE_PACK_SWAPS_WORDS 0
#define MOE_GATHER_ENTRY moe_gather_words
#define MOE_GATHER_SKIPS_LAST_WORD 0
#endif

extern "C" __global__ void MOE_PACK_ENTRY(uint8_t* target, long long target_stride, const uint8_t* base,
                                          const long long* sources, int row_bytes, int groups, int interleaved) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const int expert = blockIdx.y;
  const uint8_t* first = base + sources[2 * expert];
  const uint8_t* second = base + sources[2 * expert + 1];
  target += expert * target_stride;
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
    reinterpret_cast<uint4*>(target)[index] = MOE_PACK_SWAPS_WORDS ? make_uint4(words[0], words[2], words[1], words[3])
                                                                   : make_uint4(words[0], words[1], words[2], words[3]);
  }
}

extern "C" __global__ void MOE_GATHER_ENTRY(uint32_t* target, const uint8_t* base, const long long* offsets,
                                            int words) {
  wait_for_previous_grids();  // writes weights that kernels prefetch before waiting: no early trigger
  const uint32_t* source = reinterpret_cast<const uint32_t*>(base + offsets[blockIdx.y]);
  uint32_t* out = target + (long long)blockIdx.y * words;
  const int copied = MOE_GATHER_SKIPS_LAST_WORD ? words - 1 : words;
  for (int w = blockIdx.x * blockDim.x + threadIdx.x; w < copied; w += gridDim.x * blockDim.x) out[w] = source[w];
}
