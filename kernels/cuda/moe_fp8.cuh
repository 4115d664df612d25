// The bodies of the grouped FP8 expert GEMMs (kernels/cuda/moe_fp8.cu says what they compute), shared with the
// contract's controls.
#pragma once
#include <cuda_fp8.h>
#include "common.cuh"
#include "quantize_fp8.cuh"

#define TILE_PAIRS 8
#define WARPS 4
#define THREADS (WARPS * 32)
#define MAX_BLOCKS_PER_WARP 4
#define BLOCK_BYTES 2048
#define ROW_PAD 16
#define DOWN_WARPS 8
#define DOWN_THREADS (DOWN_WARPS * 32)

// Two e4m3 bytes (low byte first) to an f16x2 register, exactly (NaN stays NaN).
__device__ __forceinline__ unsigned e4m3x2_to_f16x2(unsigned short pair) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return (unsigned)raw.x | ((unsigned)raw.y << 16);
}

__device__ __forceinline__ void mma_f16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                        unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

struct Tile {
  int expert;
  int first;
  int pairs;
};

__device__ __forceinline__ Tile read_tile(const int* tiles, int index) {
  const int4 entry = reinterpret_cast<const int4*>(tiles)[index];
  return {entry.x, entry.y, entry.z};
}

// Issues this warp's weight loads for its blocks (16 B × 4 per lane per block), before anything else waits.
__device__ __forceinline__ void load_weights(uint4 (&w)[MAX_BLOCKS_PER_WARP][4], const uint8_t* group, int first_block,
                                             int blocks, int lane) {
#pragma unroll
  for (int i = 0; i < MAX_BLOCKS_PER_WARP; i++) {
    if (i < blocks) {
      const uint4* block = reinterpret_cast<const uint4*>(group + (long long)(first_block + i) * BLOCK_BYTES);
#pragma unroll
      for (int c = 0; c < 4; c++) w[i][c] = __ldg(block + c * 32 + lane);
    }
  }
}

// One K block's weights (16 B × 4 per lane) into one slot of a warp's ring.
__device__ __forceinline__ void load_weights_block(uint4 (&w)[4], const uint8_t* group, int block, int lane) {
  const uint4* source = reinterpret_cast<const uint4*>(group + (long long)block * BLOCK_BYTES);
#pragma unroll
  for (int c = 0; c < 4; c++) w[c] = __ldg(source + c * 32 + lane);
}

// One block's 16×8 sum S_b by mma from zero, scaled: d[0], d[1] weight row `group` for pairs 2t, 2t+1 (t: the lane's
// thread in group), d[2], d[3] row `group + 8`; each scaled as (S_b · s_x[pair, b]) · s_w.
//   x: the tile's quantised rows in shared memory (row stride x_stride bytes); x_scales: [TILE_PAIRS][blocks]
__device__ __forceinline__ void scaled_block_sums(float (&d)[4], const uint4 (&w)[4], const uint8_t* x, int x_stride,
                                                  const float* x_scales, int blocks, int b, float scale_low,
                                                  float scale_high, int lane) {
  const int group = lane >> 2;
  const int thread_in_group = lane & 3;
  const uint4* x_row = reinterpret_cast<const uint4*>(x + group * x_stride + b * 128 + thread_in_group * 32);
  const uint4 x_chunks[2] = {x_row[0], x_row[1]};
  const unsigned* x_words = reinterpret_cast<const unsigned*>(x_chunks);
  const unsigned* w_words = reinterpret_cast<const unsigned*>(w);
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#pragma unroll
  for (int step = 0; step < 8; step++) {
    const unsigned low_row = w_words[2 * step];       // weight row `group`
    const unsigned high_row = w_words[2 * step + 1];  // weight row `group + 8`
    const unsigned x_word = x_words[step];
    mma_f16(d, e4m3x2_to_f16x2(low_row & 0xffff), e4m3x2_to_f16x2(high_row & 0xffff), e4m3x2_to_f16x2(low_row >> 16),
            e4m3x2_to_f16x2(high_row >> 16), e4m3x2_to_f16x2(x_word & 0xffff), e4m3x2_to_f16x2(x_word >> 16));
  }
  const int pair = thread_in_group * 2;
  d[0] = __fmul_rn(__fmul_rn(d[0], x_scales[pair * blocks + b]), scale_low);
  d[1] = __fmul_rn(__fmul_rn(d[1], x_scales[(pair + 1) * blocks + b]), scale_low);
  d[2] = __fmul_rn(__fmul_rn(d[2], x_scales[pair * blocks + b]), scale_high);
  d[3] = __fmul_rn(__fmul_rn(d[3], x_scales[(pair + 1) * blocks + b]), scale_high);
}

// The scaled sums of block b stored as partials[b][m][n] (m: weight row of the group, n: pair).
__device__ __forceinline__ void block_partials(float* partials, const uint4 (&w)[4], const uint8_t* x, int x_stride,
                                               const float* x_scales, int blocks, int b, float scale_low,
                                               float scale_high, int lane) {
  float d[4];
  scaled_block_sums(d, w, x, x_stride, x_scales, blocks, b, scale_low, scale_high, lane);
  const int group = lane >> 2;
  const int pair = (lane & 3) * 2;
  float* out = partials + b * 128;
  out[group * 8 + pair] = d[0];
  out[group * 8 + pair + 1] = d[1];
  out[(group + 8) * 8 + pair] = d[2];
  out[(group + 8) * 8 + pair + 1] = d[3];
}

// Σ_b partials[b][m][n] in ascending b, from zero (as the reference's total).
__device__ __forceinline__ float sum_blocks(const float* partials, int blocks, int m, int n) {
  float total = 0.0f;
  for (int b = 0; b < blocks; b++) total = __fadd_rn(total, partials[b * 128 + m * 8 + n]);
  return total;
}

// h for one weight group's 8 columns and a tile's 8 pairs from the parts' sums (partials[part][m][n], summed in
// ascending part order): gate and up rounded to bf16 as the cpu does, then SiLU. Threads 0..63 of the block.
__device__ __forceinline__ void store_swiglu_group(bf16* h, const float* partials, int parts, const int* slots,
                                                   int intermediate, int group_index) {
  if (threadIdx.x >= 64) return;
  const int column = threadIdx.x >> 3;
  const int pair = threadIdx.x & 7;
  const int slot = slots[pair];
  if (slot < 0) return;
  const float gate = to_float(to_bf16(sum_blocks(partials, parts, column, pair)));
  const float up = to_float(to_bf16(sum_blocks(partials, parts, column + 8, pair)));
  h[(long long)slot * intermediate + group_index * 8 + column] = to_bf16(silu(gate) * up);
}

// The first `pairs` rows of a tile's h (slots[pair] < 0: zero bytes, scale 0) quantised into shared memory per 128
// columns by quantize_block, one warp per (pair, block): x [pairs][x_stride] e4m3, x_scales [pairs][blocks].
__device__ __forceinline__ void quantize_tile_rows(uint8_t* x, float* x_scales, int x_stride, const bf16* h,
                                                   const int* slots, int pairs, int intermediate, int warps,
                                                   float h_maximum) {
  const int lane = threadIdx.x & 31;
  const int blocks = intermediate / 128;
  for (int unit = threadIdx.x >> 5; unit < pairs * blocks; unit += warps) {
    const int pair = unit / blocks;
    const int block = unit - pair * blocks;
    const int slot = slots[pair];
    uint8_t* target = x + pair * x_stride;
    if (slot >= 0) {
      quantize_block(target, x_scales + unit, h + (long long)slot * intermediate, block, intermediate, h_maximum);
    } else {
      reinterpret_cast<uint32_t*>(target + block * QUANTIZE_BLOCK)[lane] = 0u;
      if (lane == 0) x_scales[unit] = 0.0f;
    }
  }
}

// A tile's rows staged in shared memory for the mma: x [TILE_PAIRS][x_stride] e4m3 (a row of `cols` bytes, padded),
// then their scales [TILE_PAIRS][cols / 128]. A gate|up block keeps its warps' partials right after them.
struct TileStage {
  uint8_t* x;
  float* x_scales;
  int x_stride;
};

__device__ __forceinline__ TileStage tile_stage(uint4* shared_words, int cols) {
  TileStage stage;
  stage.x_stride = cols + ROW_PAD;
  stage.x = reinterpret_cast<uint8_t*>(shared_words);
  stage.x_scales = reinterpret_cast<float*>(stage.x + TILE_PAIRS * stage.x_stride);
  return stage;
}

// The gate|up warps' partials [blocks][16 rows][8 pairs], after the staged rows' scales.
__device__ __forceinline__ float* gate_up_partials(const TileStage& stage, int hidden) {
  return stage.x_scales + TILE_PAIRS * (hidden / 128);
}

// The weight groups of one gate|up block after its tile's rows are staged: `weights` holds each warp's K blocks of
// group `first_group` (load_weights); each group's 16 rows are summed over the tile's pairs and stored as h.
// `swap_scales` applies the gate's block scales to the up rows and the up's to the gate rows: only the contract's
// control asks for that.
__device__ __forceinline__ void gate_up_groups(bf16* h, uint4 (&weights)[MAX_BLOCKS_PER_WARP][4],
                                               const uint8_t* expert_weights, const float* w_scales, int expert,
                                               const TileStage& stage, const int* slots, int first_group,
                                               int groups_walked, int hidden, int intermediate, bool swap_scales) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = hidden / 128;
  const int per_warp = blocks / WARPS;
  float* partials = gate_up_partials(stage, hidden);
#pragma unroll 1
  for (int k = 0; k < groups_walked; k++) {
    const int group_index = first_group + k;
    // Gate rows 8r.. lie in scale row r/16 of the gate's scales, up rows in the same row of the up's.
    const float* gate_scales = w_scales + ((long long)expert * (2 * intermediate / 128) + group_index / 16) * blocks;
    const float* up_scales = gate_scales + (intermediate / 128) * blocks;
    const uint8_t* next_group = expert_weights + (long long)(group_index + 1) * blocks * BLOCK_BYTES;
#pragma unroll
    for (int i = 0; i < MAX_BLOCKS_PER_WARP; i++) {
      if (i < per_warp) {
        const int b = warp * per_warp + i;
        const float gate_scale = swap_scales ? up_scales[b] : gate_scales[b];
        const float up_scale = swap_scales ? gate_scales[b] : up_scales[b];
        block_partials(partials, weights[i], stage.x, stage.x_stride, stage.x_scales, blocks, b, gate_scale, up_scale,
                       lane);
        if (k + 1 < groups_walked) load_weights_block(weights[i], next_group, b, lane);
      }
    }
    __syncthreads();
    store_swiglu_group(h, partials, blocks, slots, intermediate, group_index);
    if (k + 1 < groups_walked) __syncthreads();  // the partials are written again
  }
}

// gate|up grid: x = tile, y = runs of `groups_walked` consecutive 16-row weight groups, walked in turn; 4 warps split
// each group's K blocks (each warp a fixed range) and meet in shared memory, summed in block order. The tile's rows are
// staged once for the run; a warp's next group's weights load as soon as this group's are summed.
__device__ __forceinline__ void gate_up_fp8(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w,
                                            const float* w_scales, const int* pair_slots, const int* tiles,
                                            const int* tile_count, int hidden, int intermediate, int top_k,
                                            int groups_walked, bool swap_scales) {
  // The grid is the worst case of tiles, so this block's entry exists: read with the count, not after it.
  const Tile tile = read_tile(tiles, blockIdx.x);
  if ((int)blockIdx.x >= *tile_count) return;
  extern __shared__ uint4 shared_words[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = hidden / 128;
  const int per_warp = blocks / WARPS;
  const int first_group = blockIdx.y * groups_walked;
  const int groups = 2 * intermediate / 16;
  const uint8_t* expert_weights = w + (long long)tile.expert * groups * blocks * BLOCK_BYTES;
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, expert_weights + (long long)first_group * blocks * BLOCK_BYTES, warp * per_warp, per_warp,
               lane);
  const TileStage stage = tile_stage(shared_words, hidden);
  __shared__ int slots[TILE_PAIRS];
  if (threadIdx.x < TILE_PAIRS) {
    slots[threadIdx.x] = threadIdx.x < tile.pairs ? pair_slots[tile.first + threadIdx.x] : -1;
  }
  __syncthreads();
  const int chunks = hidden / 16;
  for (int index = threadIdx.x; index < TILE_PAIRS * chunks; index += THREADS) {
    const int pair = index / chunks;
    const int chunk = index - pair * chunks;
    const int slot = slots[pair];
    uint4 value = make_uint4(0, 0, 0, 0);
    if (slot >= 0) value = reinterpret_cast<const uint4*>(q_x + (long long)(slot / top_k) * hidden)[chunk];
    reinterpret_cast<uint4*>(stage.x + pair * stage.x_stride)[chunk] = value;
  }
  for (int index = threadIdx.x; index < TILE_PAIRS * blocks; index += THREADS) {
    const int pair = index / blocks;
    const int slot = slots[pair];
    stage.x_scales[index] = slot >= 0 ? s_x[(long long)(slot / top_k) * blocks + index - pair * blocks] : 0.0f;
  }
  __syncthreads();
  gate_up_groups(h, weights, expert_weights, w_scales, tile.expert, stage, slots, first_group, groups_walked, hidden,
                 intermediate, swap_scales);
}

// The weight groups of one down block after its tile's rows are quantised into x: `weights` holds the warp's first
// K blocks of group `first_group` (load_weights), then a ring. Pairs from `last` on are left unwritten (only the
// contract's controls ask for that).
__device__ __forceinline__ void down_groups(bf16* y, uint4 (&weights)[MAX_BLOCKS_PER_WARP][4],
                                            const uint8_t* first_weights, const float* w_scales, int expert,
                                            const TileStage& stage, const int* slots, int first_group,
                                            int groups_walked, int hidden, int intermediate, int last) {
  const int lane = threadIdx.x & 31;
  const int blocks = intermediate / 128;
  const long long group_stride = (long long)DOWN_WARPS * blocks * BLOCK_BYTES;
  const int row = lane >> 2;
#pragma unroll 1
  for (int k = 0; k < groups_walked; k++) {
    const uint8_t* group = first_weights + k * group_stride;
    const int group_index = first_group + k * DOWN_WARPS;
    // Rows 16r..16r+15 share one 128-row scale block (r/8).
    const float* scales = w_scales + ((long long)expert * (hidden / 128) + group_index / 8) * blocks;
    float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int first = 0; first < blocks; first += MAX_BLOCKS_PER_WARP) {
#pragma unroll
      for (int i = 0; i < MAX_BLOCKS_PER_WARP; i++) {
        const int b = first + i;
        if (b < blocks) {
          float d[4];
          scaled_block_sums(d, weights[i], stage.x, stage.x_stride, stage.x_scales, blocks, b, scales[b], scales[b],
                            lane);
          // The ring: this slot's next block, of this group or (after its last round) of the next one.
          if (first + MAX_BLOCKS_PER_WARP < blocks) {
            load_weights_block(weights[i], group, b + MAX_BLOCKS_PER_WARP, lane);
          } else if (k + 1 < groups_walked) {
            load_weights_block(weights[i], group + group_stride, i, lane);
          }
#pragma unroll
          for (int j = 0; j < 4; j++) total[j] = __fadd_rn(total[j], d[j]);
        }
      }
    }
    bf16* out = y + group_index * 16 + row;
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int pair = (lane & 3) * 2 + j;
      const int slot = slots[pair];
      if (slot >= 0 && pair < last) {
        out[(long long)slot * hidden] = to_bf16(total[j]);
        out[(long long)slot * hidden + 8] = to_bf16(total[2 + j]);
      }
    }
  }
}

// The down projection: one block is DOWN_WARPS warps of one tile, each walking `groups_walked` 16-row weight groups
// (every DOWN_WARPS-th from its first) (at I = 512, 8 KB of weights a group), the tile's rows of h quantised into shared memory once per block by
// quantize_fp8.cuh's quantize_block, per row per 128 columns (a warp per (pair, block)): the bytes and scales
// quantize_e4m3_rows would have written for those rows. A warp's weights stream through a ring of
// MAX_BLOCKS_PER_WARP K blocks in registers: the block after next group's same block loads as soon as this one is
// summed. Each group's K blocks are summed in ascending order in registers, each block's S_b from zero by the same
// k-steps as the gate|up GEMM, so the bits are those of a partials-then-sum pass however many groups a warp walks.
// `written_pairs` below TILE_PAIRS leaves a tile's last pairs unwritten and `h_maximum` other than E4M3_MAXIMUM
// scales h wrongly: only the contract's controls ask for those.
__device__ __forceinline__ void down_fp8(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                         const int* pair_slots, const int* tiles, const int* tile_count, int hidden,
                                         int intermediate, int groups_walked, int written_pairs, float h_maximum) {
  const int groups = hidden / 16;
  const int chunks = groups / (DOWN_WARPS * groups_walked);
  const int tile_index = blockIdx.x / chunks;
  // The grid is the worst case of tiles, so this block's entry exists: read with the count, not after it.
  const Tile tile = read_tile(tiles, tile_index);
  if (tile_index >= *tile_count) return;
  extern __shared__ uint4 shared_words[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = intermediate / 128;
  // This warp's groups: first_group, then every DOWN_WARPS-th after it.
  const int first_group = (blockIdx.x - tile_index * chunks) * DOWN_WARPS * groups_walked + warp;
  const uint8_t* first_weights = w + ((long long)tile.expert * groups + first_group) * blocks * BLOCK_BYTES;
  // The first K blocks' weights are in flight while the tile's rows are quantised.
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, first_weights, 0, min(blocks, MAX_BLOCKS_PER_WARP), lane);
  const TileStage stage = tile_stage(shared_words, intermediate);
  __shared__ int slots[TILE_PAIRS];
  if (threadIdx.x < TILE_PAIRS) {
    slots[threadIdx.x] = threadIdx.x < tile.pairs ? pair_slots[tile.first + threadIdx.x] : -1;
  }
  __syncthreads();
  // A tile's empty pairs are zero bytes with scale 0 (zero products).
  quantize_tile_rows(stage.x, stage.x_scales, stage.x_stride, h, slots, TILE_PAIRS, intermediate, DOWN_WARPS,
                     h_maximum);
  __syncthreads();
  down_groups(y, weights, first_weights, w_scales, tile.expert, stage, slots, first_group, groups_walked, hidden,
              intermediate, tile.pairs - TILE_PAIRS + written_pairs);
}
