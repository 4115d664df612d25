// The tile loop of the batch-invariant bf16 GEMM (gemm.cu says what it computes and why its bits never depend on the
// row count). Shared by gemm.cu and the contract's control that walks K in another order.
//   Block tile BM×BN, K tiles of 64 staged through shared memory by 16-byte cp.async (zero-filled past M, N and K),
//   STAGES deep; warps hold (BM/WARPS_M)×(BN/WARPS_N) of the tile as m16n8k16 bf16 mma.sync accumulators.
//   K is cut into chunks of `chunk_tiles` K tiles (the launcher derives it from N and K only). Every chunk is
//   accumulated from zero by the same mma sequence (k ascending in steps of 16); chunk sums are then added in
//   ascending chunk order: in registers (one block per tile), or as fp32 partials [chunks, M, N] that gemm_combine
//   adds in the same order (one block per chunk), or that the last block of a tile to finish adds (same order) when
//   `counters` is given. All three give the same bits.
#pragma once
#include "common.cuh"

#define GEMM_BK 64
#define GEMM_ROW_ELEMENTS (GEMM_BK + 8)  // padded shared-memory rows: ldmatrix reads hit 8 distinct bank groups

// The most K chunks the launcher cuts (gemm.ts MAX_CHUNKS).
#define GEMM_MOST_CHUNKS 16

// Σ_c partials[c · stride] in ascending c from chunk 0's partial, as every combine adds them. The first
// GEMM_MOST_CHUNKS partials are all requested before the first addition, so a combine waits for one round trip to L2
// rather than one for every few chunks; the additions and their order are the same.
__device__ __forceinline__ float chunk_partials_total(const float* partials, long long stride, int chunks) {
  float parts[GEMM_MOST_CHUNKS];
#pragma unroll
  for (int c = 0; c < GEMM_MOST_CHUNKS; c++) parts[c] = c < chunks ? partials[c * stride] : 0.0f;
  float total = parts[0];
#pragma unroll
  for (int c = 1; c < GEMM_MOST_CHUNKS; c++) {
    if (c < chunks) total = total + parts[c];
  }
  for (int c = GEMM_MOST_CHUNKS; c < chunks; c++) total = total + partials[c * stride];
  return total;
}

// Where a block sits in its GEMM: row and column tile, its K chunk (used when `splits` > 1: the chunks run on
// separate blocks and write partials), and `sum_tiles`, the K tiles after which a register sum closes (chunk_tiles
// for every real kernel; only a control passes another).
struct GemmBlock {
  int row_tile;
  int column_tile;
  int chunk;
  int splits;
  int sum_tiles;
};

// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (nothing is read then).
__device__ __forceinline__ void gemm_copy_16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(bytes) : "memory");
}

__device__ __forceinline__ void gemm_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int PENDING>
__device__ __forceinline__ void gemm_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* shared) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stores elements (row, column) and (row, column + 1) where they exist: fp32 or bf16, paired when N is even.
__device__ __forceinline__ void gemm_store_pair(void* out, bool fp32, long long row, int column, int N, float v0,
                                                float v1) {
  const long long index = row * N + column;
  const bool pair = (N & 1) == 0 && column + 1 < N;
  if (fp32) {
    float* target = static_cast<float*>(out) + index;
    if (pair) {
      *reinterpret_cast<float2*>(target) = make_float2(v0, v1);
    } else {
      if (column < N) target[0] = v0;
      if (column + 1 < N) target[1] = v1;
    }
  } else {
    bf16* target = static_cast<bf16*>(out) + index;
    if (pair) {
      *reinterpret_cast<__nv_bfloat162*>(target) = __floats2bfloat162_rn(v0, v1);
    } else {
      if (column < N) target[0] = to_bf16(v0);
      if (column + 1 < N) target[1] = to_bf16(v1);
    }
  }
}

// The last of a tile's chunk blocks to arrive adds every chunk's partial in ascending order (as gemm_combine does)
// and resets the tile's counter for the next launch. The counter only orders; it adds no data.
__device__ __forceinline__ void gemm_last_block_adds(void* y, const float* partials, int* counters, int M, int N,
                                                     int output_fp32, const GemmBlock& block, int row0, int column0,
                                                     int BM, int BN) {
  __shared__ int last_arrival;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = counters + blockIdx.y * gridDim.x + blockIdx.x;
    last_arrival = atomicAdd(counter, 1) == block.splits - 1;
    if (last_arrival) *counter = 0;
  }
  __syncthreads();
  if (!last_arrival) return;
  __threadfence();
  const long long elements = (long long)M * N;
  for (int index = threadIdx.x; index < BM * BN; index += blockDim.x) {
    const int r = row0 + index / BN;
    const int column = column0 + index % BN;
    if (r >= M || column >= N) continue;
    const long long element = (long long)r * N + column;
    float sum = __ldcg(partials + element);
    for (int c = 1; c < block.splits; c++) sum = sum + __ldcg(partials + c * elements + element);
    if (output_fp32) {
      static_cast<float*>(y)[element] = sum;
    } else {
      static_cast<bf16*>(y)[element] = to_bf16(sum);
    }
  }
}

// The block of a single GEMM's grid: (column, row, chunk) tiles, or (row, column, chunk) when ROWS_FASTEST.
template <bool ROWS_FASTEST>
__device__ __forceinline__ GemmBlock gemm_grid_block(int chunk_tiles) {
  GemmBlock block;
  block.row_tile = ROWS_FASTEST ? blockIdx.x : blockIdx.y;
  block.column_tile = ROWS_FASTEST ? blockIdx.y : blockIdx.x;
  block.chunk = blockIdx.z;
  block.splits = gridDim.z;
  block.sum_tiles = chunk_tiles;
  return block;
}

// ROWS_FASTEST: blockIdx.x walks row tiles (blockIdx.y column tiles), so the blocks running together share weight
// tiles and x stays in L2 while the weights stream about once (prefill). REVERSED_K (the contract's control only):
// with more than one row, the four 16-wide steps of each K tile run in reverse order, which is accurate but changes
// the bits with the row count.
// BK: K elements staged per tile, GEMM_BK or a multiple of it (longer contiguous weight reads); chunk_tiles and
// sum_tiles stay in GEMM_BK tiles, and the launcher uses BK > GEMM_BK only where they and K divide evenly, so every
// chunk is summed by the same mma steps in the same order (the same bits).
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool ROWS_FASTEST, bool REVERSED_K, int BK = GEMM_BK>
__device__ __forceinline__ void gemm_tiles(void* y, const bf16* x, const bf16* w, float* partials, int* counters,
                                           int M, int N, int K, int chunk_tiles, int output_fp32, GemmBlock block) {
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int WARP_ROWS = BM / WARPS_M;
  constexpr int WARP_COLUMNS = BN / WARPS_N;
  constexpr int MT = WARP_ROWS / 16;
  constexpr int NT = WARP_COLUMNS / 8;
  constexpr int LD = BK + 8;
  constexpr int CHUNKS_PER_ROW = BK / 8;
  constexpr int UNITS = BK / GEMM_BK;
  static_assert(BK % GEMM_BK == 0, "BK must be a multiple of GEMM_BK");
  static_assert(MT >= 1 && WARP_ROWS % 16 == 0, "warp rows must be a multiple of 16");
  static_assert(NT % 2 == 0, "warp columns must be a multiple of 16 (one ldmatrix.x4 loads two n8 tiles)");
  extern __shared__ uint4 gemm_shared[];
  bf16* a_tiles = reinterpret_cast<bf16*>(gemm_shared);  // [STAGES][BM][LD]
  bf16* b_tiles = a_tiles + STAGES * BM * LD;            // [STAGES][BN][LD]

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;
  const int row0 = block.row_tile * BM;
  const int column0 = block.column_tile * BN;
  const int k_tiles = (K + BK - 1) / BK;
  const bool split = block.splits > 1;
  const int tile_begin = split ? block.chunk * (chunk_tiles / UNITS) : 0;
  const int tile_end = split ? min(tile_begin + chunk_tiles / UNITS, k_tiles) : k_tiles;
  const int sum_tiles = block.sum_tiles / UNITS;
  const int tiles = tile_end - tile_begin;

  auto load_w = [&](int stage, int tile) {
    const int k0 = tile * BK;
    bf16* target = b_tiles + stage * BN * LD;
    for (int index = threadIdx.x; index < BN * CHUNKS_PER_ROW; index += THREADS) {
      const int r = index / CHUNKS_PER_ROW;
      const int c = (index % CHUNKS_PER_ROW) * 8;
      const int n = column0 + r;
      const bool valid = n < N && k0 + c < K;
      gemm_copy_16(target + r * LD + c, valid ? w + (long long)n * K + k0 + c : w, valid);
    }
  };
  auto load_x = [&](int stage, int tile) {
    const int k0 = tile * BK;
    bf16* target = a_tiles + stage * BM * LD;
    for (int index = threadIdx.x; index < BM * CHUNKS_PER_ROW; index += THREADS) {
      const int r = index / CHUNKS_PER_ROW;
      const int c = (index % CHUNKS_PER_ROW) * 8;
      const int m = row0 + r;
      const bool valid = m < M && k0 + c < K;
      gemm_copy_16(target + r * LD + c, valid ? x + (long long)m * K + k0 + c : x, valid);
    }
  };

  // The weights do not depend on the previous kernel: request their first stages before waiting for it.
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < tiles) load_w(s, tile_begin + s);
  }
  wait_for_previous_grids();
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < tiles) load_x(s, tile_begin + s);
    gemm_commit();
  }

  float acc[MT][NT][4];
  float total[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        acc[i][j][e] = 0.0f;
        total[i][j][e] = 0.0f;
      }
  bool first_chunk = true;
  const bool reversed = REVERSED_K && M > 1;

  for (int t = 0; t < tiles; t++) {
    gemm_wait<STAGES - 2>();
    __syncthreads();
    // The stage refilled here was read at step t − 1, which every warp has finished (the barrier above).
    const int ahead = t + STAGES - 1;
    if (ahead < tiles) {
      load_w(ahead % STAGES, tile_begin + ahead);
      load_x(ahead % STAGES, tile_begin + ahead);
    }
    gemm_commit();
    const bf16* a_stage = a_tiles + (t % STAGES) * BM * LD;
    const bf16* b_stage = b_tiles + (t % STAGES) * BN * LD;
#pragma unroll
    for (int step = 0; step < BK / 16; step++) {
      const int ks = (reversed ? BK / 16 - 1 - step : step) * 16;
      uint32_t a[MT][4];
#pragma unroll
      for (int i = 0; i < MT; i++) {
        const int r = warp_m * WARP_ROWS + i * 16 + (lane & 15);
        ldmatrix_x4(a[i], a_stage + r * LD + ks + (lane >> 4) * 8);
      }
      uint32_t b[NT][2];
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        const int n = warp_n * WARP_COLUMNS + j * 8 + (lane & 7) + ((lane >> 4) << 3);
        uint32_t r[4];
        ldmatrix_x4(r, b_stage + n * LD + ks + ((lane >> 3) & 1) * 8);
        b[j][0] = r[0];
        b[j][1] = r[1];
        b[j + 1][0] = r[2];
        b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++) mma_bf16(acc[i][j], a[i], b[j][0], b[j][1]);
    }
    // End of a chunk: its sum joins the total in ascending chunk order, and the next chunk starts from zero.
    const int global_tile = tile_begin + t;
    if ((global_tile + 1) % sum_tiles == 0 || t == tiles - 1) {
#pragma unroll
      for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            total[i][j][e] = first_chunk ? acc[i][j][e] : total[i][j][e] + acc[i][j][e];
            acc[i][j][e] = 0.0f;
          }
      first_chunk = false;
    }
  }
  gemm_wait<0>();

  void* out = split ? static_cast<void*>(partials + (long long)block.chunk * M * N) : y;
  const bool fp32 = split || output_fp32 != 0;
  const int group = lane >> 2;
  const int pair = (lane & 3) * 2;
#pragma unroll
  for (int i = 0; i < MT; i++) {
    const int r = row0 + warp_m * WARP_ROWS + i * 16 + group;
#pragma unroll
    for (int j = 0; j < NT; j++) {
      const int column = column0 + warp_n * WARP_COLUMNS + j * 8 + pair;
      if (r < M) gemm_store_pair(out, fp32, r, column, N, total[i][j][0], total[i][j][1]);
      if (r + 8 < M) gemm_store_pair(out, fp32, r + 8, column, N, total[i][j][2], total[i][j][3]);
    }
  }
  if (split && counters != nullptr) {
    gemm_last_block_adds(y, partials, counters, M, N, output_fp32, block, row0, column0, BM, BN);
  }
}
