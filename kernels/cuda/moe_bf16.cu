// Grouped bf16 expert GEMMs of the sparse MoE block (bf16 expert checkpoints), walking moe_group_pairs' tile table
// like moe_fp8.cu: y[p, o] = Σ_k x[p, k] · w[o, k] by mma.sync m16n8k16 (bf16 inputs, fp32 accumulator).
//   K is cut in 4 fixed quarters, each accumulated in the mma accumulator from zero (64 columns per step group, in
//   ascending order); the 4 quarters are then added in ascending order by one thread per output. gate|up: one warp
//   per quarter of one 16-row group; down: one warp per group walking the four quarters. A pair's result
//   depends only on its own row and the expert's weights, never on the tile's other pairs.
// moe_gate_up_bf16: h[slot, j] = bf16(silu(bf16(gate_j)) · bf16(up_j)); x: [rows, hidden] bf16 (the normed rows)
//   w: [experts, 2I/16 row groups, hidden/64 blocks, 2048 bytes] fragment order (moeWeights.ts): row group r holds
//   gate rows 8r..8r+7 then up rows 8r..8r+7
// moe_down_bf16: y[slot, o] = bf16(Σ_k h[slot, k] · w[o, k]); w: [experts, hidden/16, I/64, 2048 bytes]
// A block is 16 rows × 64 columns: lane L's 64 bytes are chunks c = 0..3 (k-step c) at byte (c·32 + L)·16; word v of
// a chunk is row g + 8·(v & 1) (g = L >> 2), columns 16·(L & 3) + 4c + 2·(v >> 1) + (0, 1) of the block.
#include "common.cuh"
#include "moe_fp8.cuh"

#define BF16_BLOCK_COLUMNS 64

__device__ __forceinline__ void mma_bf16(float (&d)[4], uint4 a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// This warp's quarter of K: rounds of up to MAX_BLOCKS_PER_WARP blocks, accumulated in d.
__device__ __forceinline__ void warp_quarter_bf16(float (&d)[4], const uint8_t* group, const uint8_t* x, int x_stride,
                                                  int first_block, int blocks, uint4 (&w)[MAX_BLOCKS_PER_WARP][4],
                                                  int lane) {
  const int row = lane >> 2;
  const int thread_in_group = lane & 3;
  for (int round = 0; round < blocks; round += MAX_BLOCKS_PER_WARP) {
    if (round > 0) load_weights(w, group, first_block + round, min(MAX_BLOCKS_PER_WARP, blocks - round), lane);
#pragma unroll
    for (int i = 0; i < MAX_BLOCKS_PER_WARP; i++) {
      if (round + i < blocks) {
        const int b = first_block + round + i;
        const uint4* x_row = reinterpret_cast<const uint4*>(x + row * x_stride + b * 128 + thread_in_group * 32);
        const uint4 x_chunks[2] = {x_row[0], x_row[1]};
        const unsigned* x_words = reinterpret_cast<const unsigned*>(x_chunks);
#pragma unroll
        for (int step = 0; step < 4; step++) mma_bf16(d, w[i][step], x_words[2 * step], x_words[2 * step + 1]);
      }
    }
  }
}

// Stores a warp's 16×8 sums as partials[warp][m][n].
__device__ __forceinline__ void store_quarter(float* partials, const float (&d)[4], int warp, int lane) {
  const int group = lane >> 2;
  const int pair = (lane & 3) * 2;
  float* out = partials + warp * 128;
  out[group * 8 + pair] = d[0];
  out[group * 8 + pair + 1] = d[1];
  out[(group + 8) * 8 + pair] = d[2];
  out[(group + 8) * 8 + pair + 1] = d[3];
}

// Copies the tile's bf16 rows (row `slot / divisor` of `source`, `columns` wide) into shared memory, zero padding.
__device__ __forceinline__ void stage_rows(uint8_t* x, int x_stride, const bf16* source, const int* slots, int divisor,
                                           int columns) {
  const int chunks = columns / 8;
  for (int index = threadIdx.x; index < TILE_PAIRS * chunks; index += blockDim.x) {
    const int pair = index / chunks;
    const int chunk = index - pair * chunks;
    const int slot = slots[pair];
    uint4 value = make_uint4(0, 0, 0, 0);
    if (slot >= 0) value = reinterpret_cast<const uint4*>(source + (long long)(slot / divisor) * columns)[chunk];
    reinterpret_cast<uint4*>(x + pair * x_stride)[chunk] = value;
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    moe_gate_up_bf16(bf16* h, const bf16* x_rows, const uint8_t* w, const int* pair_slots, const int* tiles,
                     const int* tile_count, int hidden, int intermediate, int top_k) {
  KERNEL_PROLOGUE();
  if ((int)blockIdx.x >= *tile_count) return;
  extern __shared__ uint4 staged_rows[];
  __shared__ int slots[TILE_PAIRS];
  const Tile tile = read_tile(tiles, blockIdx.x);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = hidden / BF16_BLOCK_COLUMNS;
  const int per_warp = blocks / WARPS;
  const uint8_t* group = w + ((long long)tile.expert * (2 * intermediate / 16) + blockIdx.y) * blocks * BLOCK_BYTES;
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, group, warp * per_warp, min(MAX_BLOCKS_PER_WARP, per_warp), lane);
  const int x_stride = 2 * hidden + ROW_PAD;
  uint8_t* x = reinterpret_cast<uint8_t*>(staged_rows);
  float* partials = reinterpret_cast<float*>(x + TILE_PAIRS * x_stride);
  if (threadIdx.x < TILE_PAIRS) {
    slots[threadIdx.x] = threadIdx.x < tile.pairs ? pair_slots[tile.first + threadIdx.x] : -1;
  }
  __syncthreads();
  stage_rows(x, x_stride, x_rows, slots, top_k, hidden);
  __syncthreads();
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  warp_quarter_bf16(d, group, x, x_stride, warp * per_warp, per_warp, weights, lane);
  store_quarter(partials, d, warp, lane);
  __syncthreads();
  store_swiglu_group(h, partials, WARPS, slots, intermediate, blockIdx.y);
}

// One block is DOWN_WARPS consecutive 16-row weight groups of one tile (moe_fp8.cuh's down grid), one group per
// warp, the tile's rows of h staged once per block. The warp walks its group's K blocks in order and keeps the four
// quarter sums apart, each from zero, adding them in ascending order: the bits of four warps meeting in shared memory.
extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    moe_down_bf16(bf16* y, const bf16* h, const uint8_t* w, const int* pair_slots, const int* tiles,
                  const int* tile_count, int hidden, int intermediate) {
  KERNEL_PROLOGUE();
  const int groups = hidden / 16;
  const int chunks = groups / DOWN_WARPS;
  const int tile_index = blockIdx.x / chunks;
  if (tile_index >= *tile_count) return;
  extern __shared__ uint4 staged_rows[];
  __shared__ int slots[TILE_PAIRS];
  const Tile tile = read_tile(tiles, tile_index);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = intermediate / BF16_BLOCK_COLUMNS;
  const int per_quarter = blocks / WARPS;
  const int group_index = (blockIdx.x - tile_index * chunks) * DOWN_WARPS + warp;
  const uint8_t* group = w + ((long long)tile.expert * groups + group_index) * blocks * BLOCK_BYTES;
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, group, 0, min(MAX_BLOCKS_PER_WARP, blocks), lane);
  const int x_stride = 2 * intermediate + ROW_PAD;
  uint8_t* x = reinterpret_cast<uint8_t*>(staged_rows);
  if (threadIdx.x < TILE_PAIRS) {
    slots[threadIdx.x] = threadIdx.x < tile.pairs ? pair_slots[tile.first + threadIdx.x] : -1;
  }
  __syncthreads();
  stage_rows(x, x_stride, h, slots, 1, intermediate);
  __syncthreads();
  const int row = lane >> 2;
  const int thread_in_group = lane & 3;
  float quarter[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int first = 0; first < blocks; first += MAX_BLOCKS_PER_WARP) {
    if (first > 0) load_weights(weights, group, first, min(MAX_BLOCKS_PER_WARP, blocks - first), lane);
#pragma unroll
    for (int i = 0; i < MAX_BLOCKS_PER_WARP; i++) {
      const int b = first + i;
      if (b < blocks) {
        const uint4* x_row = reinterpret_cast<const uint4*>(x + row * x_stride + b * 128 + thread_in_group * 32);
        const uint4 x_chunks[2] = {x_row[0], x_row[1]};
        const unsigned* x_words = reinterpret_cast<const unsigned*>(x_chunks);
#pragma unroll
        for (int step = 0; step < 4; step++) {
          mma_bf16(quarter, weights[i][step], x_words[2 * step], x_words[2 * step + 1]);
        }
        if ((b + 1) % per_quarter == 0) {
#pragma unroll
          for (int j = 0; j < 4; j++) {
            total[j] = __fadd_rn(total[j], quarter[j]);
            quarter[j] = 0.0f;
          }
        }
      }
    }
  }
  bf16* out = y + group_index * 16 + row;
#pragma unroll
  for (int j = 0; j < 2; j++) {
    const int slot = slots[thread_in_group * 2 + j];
    if (slot >= 0) {
      out[(long long)slot * hidden] = to_bf16(total[j]);
      out[(long long)slot * hidden + 8] = to_bf16(total[2 + j]);
    }
  }
}
