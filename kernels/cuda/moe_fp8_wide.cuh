// The grouped FP8 expert GEMMs for calls of many rows (prefill): the arithmetic of moe_fp8.cuh, element for element,
// on wide tiles of up to WIDE_PAIRS pairs of one expert, so that a block's weights are loaded and widened once for
// 64 pairs instead of 8. Every output is the same sum as the narrow kernels': each 128-column block's S_b by the same
// eight m16n8k16 k-steps from zero (the mma's columns are independent: a pair's sums do not depend on the other
// pairs of its tile), scaled as (S_b · s_x) · s_w, the blocks added in ascending b from zero in fp32. So a row's bits
// do not depend on which variant ran, and the launcher picks by the call's row count alone.
//
// A wide tile is a run of WIDE_TILES consecutive narrow tiles of one expert (the grouping's tile table, unchanged):
// the block at narrow tile t leads a wide tile when t is the first of its expert's tiles or WIDE_TILES after one;
// every other block returns at once. The tile's quantised rows are widened to f16 in shared memory in the mma's
// operand order (below), so each warp reads a pair's two B registers with one 64-bit load.
#pragma once
#include "moe_fp8.cuh"

#define WIDE_TILES 8
#define WIDE_PAIRS (WIDE_TILES * TILE_PAIRS)
#define WIDE_WARPS 4
#define WIDE_THREADS (WIDE_WARPS * 32)
#define WIDE_DOWN_WARPS 8
#define WIDE_DOWN_THREADS (WIDE_DOWN_WARPS * 32)
#define WIDE_DOWN_SPLIT 2
// One pair's 128-column block in f16: four 16-word segments (one per thread in the mma's group), each padded to 18
// words, and a row stride of 72 words (8 mod 32): a warp's 64-bit loads of step s meet 32 distinct banks.
#define WIDE_SEGMENT_WORDS 18
#define WIDE_ROW_WORDS (4 * WIDE_SEGMENT_WORDS)

struct WideTile {
  int expert;
  int first;
  int pairs;  // 0: this block leads no wide tile
};

__device__ __forceinline__ WideTile read_wide_tile(const int* tiles, const int* expert_offsets, const int* tile_count,
                                                   int index) {
  WideTile wide = {0, 0, 0};
  if (index >= *tile_count) return wide;
  const Tile tile = read_tile(tiles, index);
  if (tile.expert < 0) return wide;
  const int start = expert_offsets[tile.expert];
  if (((tile.first - start) / TILE_PAIRS) % WIDE_TILES != 0) return wide;
  wide.expert = tile.expert;
  wide.first = tile.first;
  wide.pairs = min(WIDE_PAIRS, expert_offsets[tile.expert + 1] - tile.first);
  return wide;
}

// 32 e4m3 bytes (one thread-in-group's share of a 128-column block) to its 16 f16x2 words, exactly.
__device__ __forceinline__ void widen_segment(unsigned* target, uint4 low, uint4 high) {
  const unsigned source[8] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const uint2 words = make_uint2(e4m3x2_to_f16x2(source[i] & 0xffff), e4m3x2_to_f16x2(source[i] >> 16));
    reinterpret_cast<uint2*>(target)[i] = words;
  }
}

// S_b for the warp's 16 weight rows and the tile's first `slabs` slabs of 8 pairs: d[j] is slab j's (pairs
// 8j..8j+7) m16n8 sums from zero over the block's eight k-steps, in the narrow kernel's operand order
// (scaled_block_sums). Slabs past the tile's pairs are skipped (the same for the whole warp).
//   x: the block's widened rows, [WIDE_PAIRS][WIDE_ROW_WORDS]
__device__ __forceinline__ void wide_block_sums(float (&d)[WIDE_TILES][4], const uint4 (&w)[4], const unsigned* x,
                                                int slabs, int lane) {
  const int group = lane >> 2;
  const int thread_in_group = lane & 3;
  const unsigned* w_words = reinterpret_cast<const unsigned*>(w);
  const unsigned* row = x + group * WIDE_ROW_WORDS + thread_in_group * WIDE_SEGMENT_WORDS;
#pragma unroll
  for (int j = 0; j < WIDE_TILES; j++) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0.0f;
#pragma unroll
  for (int step = 0; step < 8; step++) {
    const unsigned low_row = w_words[2 * step];
    const unsigned high_row = w_words[2 * step + 1];
    const unsigned a0 = e4m3x2_to_f16x2(low_row & 0xffff);
    const unsigned a1 = e4m3x2_to_f16x2(high_row & 0xffff);
    const unsigned a2 = e4m3x2_to_f16x2(low_row >> 16);
    const unsigned a3 = e4m3x2_to_f16x2(high_row >> 16);
#pragma unroll
    for (int j = 0; j < WIDE_TILES; j++) {
      if (j < slabs) {
        const uint2 b = *reinterpret_cast<const uint2*>(row + j * TILE_PAIRS * WIDE_ROW_WORDS + 2 * step);
        mma_f16(d[j], a0, a1, a2, a3, b.x, b.y);
      }
    }
  }
}

// total += (S_b · s_x[pair, b]) · s_w for the lane's pairs 2t, 2t+1 of each slab (rows `group` by scale_low,
// `group + 8` by scale_high): the narrow kernels' scaling and their ascending sum.
__device__ __forceinline__ void wide_add_block(float (&total)[WIDE_TILES][4], const float (&d)[WIDE_TILES][4],
                                               const float* x_scales, int blocks, int b, float scale_low,
                                               float scale_high, int slabs, int lane) {
  const int pair = (lane & 3) * 2;
#pragma unroll
  for (int j = 0; j < WIDE_TILES; j++) {
    if (j >= slabs) continue;
    const float first = x_scales[(j * TILE_PAIRS + pair) * blocks + b];
    const float second = x_scales[(j * TILE_PAIRS + pair + 1) * blocks + b];
    total[j][0] = __fadd_rn(total[j][0], __fmul_rn(__fmul_rn(d[j][0], first), scale_low));
    total[j][1] = __fadd_rn(total[j][1], __fmul_rn(__fmul_rn(d[j][1], second), scale_low));
    total[j][2] = __fadd_rn(total[j][2], __fmul_rn(__fmul_rn(d[j][2], first), scale_high));
    total[j][3] = __fadd_rn(total[j][3], __fmul_rn(__fmul_rn(d[j][3], second), scale_high));
  }
}

// This thread's two segments of block b of the tile's rows (zeros past the tile's pairs): loads, then widening into
// the buffer once the buffer is free.
struct WideStaging {
  uint4 bytes[2][2];

  __device__ __forceinline__ void load(const uint8_t* q_x, const int* rows, int hidden, int b) {
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int segment = threadIdx.x + i * WIDE_THREADS;
      const int row = rows[segment >> 2];
      bytes[i][0] = bytes[i][1] = make_uint4(0, 0, 0, 0);
      if (row >= 0) {
        const uint4* source =
            reinterpret_cast<const uint4*>(q_x + (long long)row * hidden + b * 128 + (segment & 3) * 32);
        bytes[i][0] = source[0];
        bytes[i][1] = source[1];
      }
    }
  }

  __device__ __forceinline__ void widen(unsigned* buffer) const {
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int segment = threadIdx.x + i * WIDE_THREADS;
      widen_segment(buffer + (segment >> 2) * WIDE_ROW_WORDS + (segment & 3) * WIDE_SEGMENT_WORDS, bytes[i][0],
                    bytes[i][1]);
    }
  }
};


// gate|up + SwiGLU on a wide tile: grid x = narrow tile (the worst-case count), y = WIDE_WARPS weight groups, one per
// warp. The K blocks stream through two f16 buffers (the next block's rows and weights loaded while this one is
// summed). `blocks_descending` walks the K blocks from the last: only the contract's control asks for that.
__device__ __forceinline__ void gate_up_fp8_wide(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w,
                                                 const float* w_scales, const int* pair_slots,
                                                 const int* expert_offsets, const int* tiles, const int* tile_count,
                                                 int hidden, int intermediate, int top_k, bool blocks_descending) {
  const WideTile tile = read_wide_tile(tiles, expert_offsets, tile_count, blockIdx.x);
  if (tile.pairs == 0) return;
  extern __shared__ uint4 shared_words[];
  unsigned* buffers = reinterpret_cast<unsigned*>(shared_words);  // [2][WIDE_PAIRS][WIDE_ROW_WORDS]
  float* x_scales = reinterpret_cast<float*>(buffers + 2 * WIDE_PAIRS * WIDE_ROW_WORDS);  // [WIDE_PAIRS][blocks]
  __shared__ int slots[WIDE_PAIRS];
  __shared__ int rows[WIDE_PAIRS];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = hidden / 128;
  const int group_index = blockIdx.y * WIDE_WARPS + warp;
  const int groups = 2 * intermediate / 16;
  const uint8_t* group = w + ((long long)tile.expert * groups + group_index) * blocks * BLOCK_BYTES;
  const auto block_at = [&](int i) { return blocks_descending ? blocks - 1 - i : i; };
  const int slabs = (tile.pairs + TILE_PAIRS - 1) / TILE_PAIRS;
  uint4 weights[2][4];
  load_weights_block(weights[0], group, block_at(0), lane);
  for (int p = threadIdx.x; p < WIDE_PAIRS; p += WIDE_THREADS) {
    const int slot = p < tile.pairs ? pair_slots[tile.first + p] : -1;
    slots[p] = slot;
    rows[p] = slot >= 0 ? slot / top_k : -1;
  }
  __syncthreads();
  for (int index = threadIdx.x; index < WIDE_PAIRS * blocks; index += WIDE_THREADS) {
    const int pair = index / blocks;
    x_scales[index] = rows[pair] >= 0 ? s_x[(long long)rows[pair] * blocks + index - pair * blocks] : 0.0f;
  }
  WideStaging staging;
  staging.load(q_x, rows, hidden, block_at(0));
  staging.widen(buffers);
  __syncthreads();
  const float* gate_scales = w_scales + ((long long)tile.expert * (2 * intermediate / 128) + group_index / 16) * blocks;
  const float* up_scales = gate_scales + (intermediate / 128) * blocks;
  float total[WIDE_TILES][4];
#pragma unroll
  for (int j = 0; j < WIDE_TILES; j++) total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.0f;
  // Two blocks an iteration, so each weights buffer is a fixed register array (blocks is a multiple of 4).
  for (int i = 0; i < blocks; i += 2) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int index = i + half;
      const bool more = index + 1 < blocks;
      if (more) {
        load_weights_block(weights[half ^ 1], group, block_at(index + 1), lane);
        staging.load(q_x, rows, hidden, block_at(index + 1));
      }
      float d[WIDE_TILES][4];
      wide_block_sums(d, weights[half], buffers + half * WIDE_PAIRS * WIDE_ROW_WORDS, slabs, lane);
      const int b = block_at(index);
      wide_add_block(total, d, x_scales, blocks, b, gate_scales[b], up_scales[b], slabs, lane);
      if (more) staging.widen(buffers + (half ^ 1) * WIDE_PAIRS * WIDE_ROW_WORDS);
      __syncthreads();
    }
  }
  const int column = group_index * 8 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < WIDE_TILES; j++) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int pair = j * TILE_PAIRS + (lane & 3) * 2 + e;
      if (pair < tile.pairs) {
        const float gate = to_float(to_bf16(total[j][e]));
        const float up = to_float(to_bf16(total[j][2 + e]));
        h[(long long)slots[pair] * intermediate + column] = to_bf16(silu(gate) * up);
      }
    }
  }
}

// The down projection on a wide tile: grid x = narrow tile (the worst-case count), y = WIDE_DOWN_SPLIT parts of the
// output rows; a block's 8 warps walk their part in chunks of 8 16-row weight groups (a warp per group), so the tile's
// rows of h are quantised (quantize_block: the bytes and scales moe_down_fp8 computes) and widened to f16 once per
// part, not once per chunk. The next unit's weights (the next K block, or the next chunk's first) load while this one
// is summed. `written_pairs` below WIDE_PAIRS leaves a wide tile's last pairs unwritten: only the contract's control
// asks for that.
__device__ __forceinline__ void down_fp8_wide(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                              const int* pair_slots, const int* expert_offsets, const int* tiles,
                                              const int* tile_count, int hidden, int intermediate,
                                              int written_pairs) {
  const WideTile tile = read_wide_tile(tiles, expert_offsets, tile_count, blockIdx.x);
  if (tile.pairs == 0) return;
  extern __shared__ uint4 shared_words[];
  const int groups = hidden / 16;
  const int blocks = intermediate / 128;
  const int x_stride = intermediate + ROW_PAD;
  unsigned* widened = reinterpret_cast<unsigned*>(shared_words);  // [blocks][WIDE_PAIRS][WIDE_ROW_WORDS]
  uint8_t* x = reinterpret_cast<uint8_t*>(widened + blocks * WIDE_PAIRS * WIDE_ROW_WORDS);  // [WIDE_PAIRS][x_stride]
  float* x_scales = reinterpret_cast<float*>(x + WIDE_PAIRS * x_stride);                     // [WIDE_PAIRS][blocks]
  __shared__ int slots[WIDE_PAIRS];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int slabs = (tile.pairs + TILE_PAIRS - 1) / TILE_PAIRS;
  const int part_groups = groups / WIDE_DOWN_SPLIT;
  const int first_group = blockIdx.y * part_groups + warp;
  const uint8_t* expert_weights = w + (long long)tile.expert * groups * blocks * BLOCK_BYTES;
  // Unit u of this warp: K block u % blocks of weight group first_group + (u / blocks) · WIDE_DOWN_WARPS.
  const auto unit_group = [&](int u) { return first_group + (u / blocks) * WIDE_DOWN_WARPS; };
  const auto unit_weights = [&](int u) {
    return expert_weights + ((long long)unit_group(u) * blocks + u % blocks) * BLOCK_BYTES;
  };
  uint4 weights[2][4];
  load_weights_block(weights[0], unit_weights(0), 0, lane);
  for (int p = threadIdx.x; p < WIDE_PAIRS; p += WIDE_DOWN_THREADS) {
    slots[p] = p < tile.pairs ? pair_slots[tile.first + p] : -1;
  }
  __syncthreads();
  // As moe_down_fp8 does; pairs past the tile are zero bytes with scale 0.
  quantize_tile_rows(x, x_scales, x_stride, h, slots, slabs * TILE_PAIRS, intermediate, WIDE_DOWN_WARPS, E4M3_MAXIMUM);
  __syncthreads();
  for (int segment = threadIdx.x; segment < blocks * slabs * TILE_PAIRS * 4; segment += WIDE_DOWN_THREADS) {
    const int block = segment / (slabs * TILE_PAIRS * 4);
    const int pair = (segment >> 2) % (slabs * TILE_PAIRS);
    const int part = segment & 3;
    const uint4* source = reinterpret_cast<const uint4*>(x + pair * x_stride + block * 128 + part * 32);
    widen_segment(widened + (block * WIDE_PAIRS + pair) * WIDE_ROW_WORDS + part * WIDE_SEGMENT_WORDS, source[0],
                  source[1]);
  }
  __syncthreads();
  const int units = (part_groups / WIDE_DOWN_WARPS) * blocks;
  const int last = tile.pairs - WIDE_PAIRS + written_pairs;
  float total[WIDE_TILES][4];
#pragma unroll
  for (int j = 0; j < WIDE_TILES; j++) total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.0f;
  // Two units an iteration, so each weights buffer is a fixed register array (blocks is a multiple of 4).
  for (int u = 0; u < units; u += 2) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int unit = u + half;
      if (unit + 1 < units) load_weights_block(weights[half ^ 1], unit_weights(unit + 1), 0, lane);
      const int b = unit % blocks;
      const int group_index = unit_group(unit);
      // Rows 16r..16r+15 share one 128-row scale block (r/8).
      const float scale = w_scales[((long long)tile.expert * (hidden / 128) + group_index / 8) * blocks + b];
      float d[WIDE_TILES][4];
      wide_block_sums(d, weights[half], widened + b * WIDE_PAIRS * WIDE_ROW_WORDS, slabs, lane);
      wide_add_block(total, d, x_scales, blocks, b, scale, scale, slabs, lane);
      if (b == blocks - 1) {
        bf16* out = y + group_index * 16 + (lane >> 2);
#pragma unroll
        for (int j = 0; j < WIDE_TILES; j++) {
#pragma unroll
          for (int e = 0; e < 2; e++) {
            const int pair = j * TILE_PAIRS + (lane & 3) * 2 + e;
            if (pair < tile.pairs && pair < last) {
              out[(long long)slots[pair] * hidden] = to_bf16(total[j][e]);
              out[(long long)slots[pair] * hidden + 8] = to_bf16(total[j][2 + e]);
            }
          }
          total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.0f;
        }
      }
    }
  }
}
