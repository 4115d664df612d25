// The batch-invariant bf16 GEMM's tile loop on Hopper's warpgroup tensor-core instruction (wgmma, sm_90a), for calls
// of 17 to 64 rows: one warpgroup holds a 64 × BN tile, reading both operands straight from shared memory, so the
// weights are read from shared memory once per tile instead of once per warp as mma.sync's fragments are.
//   Stages: x [64][64] and w [BN][64] bf16 K tiles, each row one 128-byte swizzle atom (16-byte piece p of row r at
//   piece p ^ (r & 7)), filled by 16-byte cp.async (zero past M, N and K).
//   Sums: the same as gemm_tiles' (gemm_tiles.cuh): each K chunk of `chunk_tiles` 64-element tiles accumulated from
//   +0 by k16 tensor-core steps in ascending k (the accumulator is zeroed and added to, as mma.sync adds to its zeroed
//   C, never overwritten), chunk sums added in ascending order through fp32 partials. A k16 wgmma step gives each
//   element the bits of mma.sync.m16n8k16's step: measured, not documented, so the kernel contract's configuration
//   equivalence holds these tiles to rows16's bytes, and bench/gpu-gemm-decode.ts does at every projection of the step.
#pragma once
#include "gemm_tiles.cuh"

#define GEMM_WG_ROWS 64
#define GEMM_WG_ROW_BYTES 128  // a K tile row: 64 bf16, one 128-byte swizzle atom
#define GEMM_WG_ALIGN 1024     // a swizzled tile starts on a 1024-byte boundary (8 rows × 128 bytes)

// Byte offset of 16-byte piece `piece` of row `row` in a 128-byte-swizzled tile.
__device__ __forceinline__ uint32_t gemm_wg_swizzled(int row, int piece) {
  return (uint32_t)(row * GEMM_WG_ROW_BYTES + ((piece ^ (row & 7)) << 4));
}

// The shared-memory matrix descriptor of a K-major 128-byte-swizzled tile whose first row starts at `address`: rows
// 128 bytes apart, groups of 8 rows 1024 bytes apart (the stride byte offset); the leading byte offset is unused
// when a k16 step lies inside one swizzle atom. Advancing `address` by 32 bytes moves the step 16 elements along K.
__device__ __forceinline__ uint64_t gemm_wg_descriptor(uint32_t address) {
  uint64_t descriptor = (uint64_t)((address & 0x3FFFF) >> 4);
  descriptor |= (uint64_t)1 << 16;
  descriptor |= (uint64_t)(GEMM_WG_ALIGN >> 4) << 32;
  descriptor |= (uint64_t)1 << 62;
  return descriptor;
}

// The warpgroup instructions exist only in sm_90a code; elsewhere these helpers are empty (the tile function traps).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GEMM_WG_ASM(text) asm volatile(text ::: "memory")
#else
#define GEMM_WG_ASM(text)
#endif

__device__ __forceinline__ void gemm_wg_fence() { GEMM_WG_ASM("wgmma.fence.sync.aligned;"); }
__device__ __forceinline__ void gemm_wg_commit() { GEMM_WG_ASM("wgmma.commit_group.sync.aligned;"); }
__device__ __forceinline__ void gemm_wg_wait_all() { GEMM_WG_ASM("wgmma.wait_group.sync.aligned 0;"); }
// cp.async wrote the stage through the generic proxy; the tensor cores read it through the async proxy.
__device__ __forceinline__ void gemm_wg_proxy_fence() { GEMM_WG_ASM("fence.proxy.async.shared::cta;"); }

// Keeps the compiler from moving accumulator reads or writes across a wgmma wait or fence.
__device__ __forceinline__ void gemm_wg_hold(float (&d)[32]) {
#pragma unroll
  for (int i = 0; i < 32; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// d[64 × 64] += a[64 × 16] · b[64 × 16]ᵀ, both K-major in shared memory (descriptors), fp32 accumulation.
__device__ __forceinline__ void gemm_wg_m64n64k16(float (&d)[32], uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b));
#endif
}

// A tile's row count as a type, so that one staging lambda serves the x and the weight tiles with constant bounds.
template <int ROWS>
struct GemmWgRows {
  static constexpr int value = ROWS;
};

// One 64 × BN tile (BN a multiple of 64: BN / 64 wgmma per k16 step) of a GEMM or of one of its K chunks, with the
// arguments and the outputs of gemm_tiles. 128 threads: one warpgroup. Every K chunk runs on its own block (the
// launcher always splits these tiles), so a block's accumulators hold one chunk's sum. A stage holds KT consecutive
// 64-element K tiles (each its own swizzled x and w tiles), so each weight row is read KT · 128 contiguous bytes a
// stage; a stage never reads past its block's chunk.
template <int BN, int STAGES, int KT>
__device__ __forceinline__ void gemm_tiles_wgmma(void* y, const bf16* x, const bf16* w, float* partials, int* counters,
                                                 int M, int N, int K, int chunk_tiles, int output_fp32,
                                                 GemmBlock block) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = GEMM_WG_ROWS;
  constexpr int THREADS = 128;
  constexpr int SUBTILES = BN / 64;
  constexpr int X_TILE = BM * GEMM_WG_ROW_BYTES;
  constexpr int W_TILE = BN * GEMM_WG_ROW_BYTES;
  constexpr int STAGE_BYTES = KT * (X_TILE + W_TILE);
  constexpr int PIECES = 8 * KT;  // 16-byte pieces of a row a stage
  static_assert(BN % 64 == 0, "BN must be a multiple of 64");
  extern __shared__ uint4 gemm_shared[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(gemm_shared));
  const uint32_t base = (raw + GEMM_WG_ALIGN - 1) & ~(uint32_t)(GEMM_WG_ALIGN - 1);
  char* const stages = reinterpret_cast<char*>(gemm_shared) + (base - raw);

  const int row0 = block.row_tile * BM;
  const int column0 = block.column_tile * BN;
  const int k_tiles = (K + GEMM_BK - 1) / GEMM_BK;
  const bool split = block.splits > 1;
  const int tile_begin = split ? block.chunk * chunk_tiles : 0;
  const int tile_end = split ? min(tile_begin + chunk_tiles, k_tiles) : k_tiles;
  const int steps = (tile_end - tile_begin + KT - 1) / KT;
  if (!split && k_tiles > chunk_tiles) __trap();  // a block sums one chunk: the launcher always splits these tiles

  // Stage `step`'s KT K tiles of ROWS rows of `source` (row `first` on, `limit` rows in all, K-major) into `target`,
  // one swizzled tile of ROWS rows after another; zero past the rows, K and the block's chunk.
  auto load_rows = [&](auto rows_tag, char* target, const bf16* source, int first, int limit, int step) {
    constexpr int ROWS = decltype(rows_tag)::value;
#pragma unroll
    for (int index = threadIdx.x; index < ROWS * PIECES; index += THREADS) {
      const int r = index / PIECES;
      const int sub = (index % PIECES) >> 3;
      const int piece = index & 7;
      const int tile = tile_begin + step * KT + sub;
      const int row = first + r;
      const int k = tile * GEMM_BK + piece * 8;
      const bool valid = row < limit && k < K && tile < tile_end;
      const bf16* from = valid ? source + (long long)row * K + k : source;
      gemm_copy_16(target + sub * ROWS * GEMM_WG_ROW_BYTES + gemm_wg_swizzled(r, piece), from, valid);
    }
  };
  auto load_w = [&](int stage, int step) {
    load_rows(GemmWgRows<BN>{}, stages + stage * STAGE_BYTES + KT * X_TILE, w, column0, N, step);
  };
  auto load_x = [&](int stage, int step) {
    load_rows(GemmWgRows<BM>{}, stages + stage * STAGE_BYTES, x, row0, M, step);
  };

  // The weights do not depend on the previous kernel: request their first stages before waiting for it.
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < steps) load_w(s, s);
  }
  wait_for_previous_grids();
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < steps) load_x(s, s);
    gemm_commit();
  }

  float acc[SUBTILES][32];
#pragma unroll
  for (int j = 0; j < SUBTILES; j++)
#pragma unroll
    for (int e = 0; e < 32; e++) acc[j][e] = 0.0f;

  for (int step = 0; step < steps; step++) {
    gemm_wait<STAGES - 2>();
    gemm_wg_proxy_fence();
    __syncthreads();
    // The stage refilled here was read at step − 1, whose wgmma every thread has waited for (the barrier above).
    const int ahead = step + STAGES - 1;
    if (ahead < steps) {
      load_w(ahead % STAGES, ahead);
      load_x(ahead % STAGES, ahead);
    }
    gemm_commit();
    const uint32_t x_stage = base + (step % STAGES) * STAGE_BYTES;
    const uint32_t w_stage = x_stage + KT * X_TILE;
    // One wgmma group a K tile, waited for before the next: no other instruction touches the accumulators while a
    // group is in flight (ptxas would serialize the group's wgmma otherwise).
#pragma unroll
    for (int sub = 0; sub < KT; sub++) {
      const int tile = tile_begin + step * KT + sub;
      if (tile >= tile_end) break;
#pragma unroll
      for (int j = 0; j < SUBTILES; j++) gemm_wg_hold(acc[j]);
      gemm_wg_fence();
#pragma unroll
      for (int k16 = 0; k16 < GEMM_BK / 16; k16++) {
        const uint64_t a = gemm_wg_descriptor(x_stage + sub * X_TILE + k16 * 32);
        const uint32_t w_step = w_stage + sub * W_TILE + k16 * 32;
#pragma unroll
        for (int j = 0; j < SUBTILES; j++) {
          gemm_wg_m64n64k16(acc[j], a, gemm_wg_descriptor(w_step + j * 64 * GEMM_WG_ROW_BYTES));
        }
      }
      gemm_wg_commit();
      gemm_wg_wait_all();
#pragma unroll
      for (int j = 0; j < SUBTILES; j++) gemm_wg_hold(acc[j]);
    }
  }
  gemm_wait<0>();

  // The accumulator of m64nNk16: warp w holds rows 16w + lane / 4 and + 8; value 4i + e of an n8 column group i sits
  // at column 8i + 2 (lane % 4) + (e & 1), row + 8 when e ≥ 2 (mma.sync's C fragment, column group by group).
  void* out = split ? static_cast<void*>(partials + (long long)block.chunk * M * N) : y;
  const bool fp32 = split || output_fp32 != 0;
  const int lane = threadIdx.x & 31;
  const int r = row0 + (threadIdx.x >> 5) * 16 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < SUBTILES; j++) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const int column = column0 + j * 64 + i * 8 + (lane & 3) * 2;
      if (r < M) gemm_store_pair(out, fp32, r, column, N, acc[j][4 * i], acc[j][4 * i + 1]);
      if (r + 8 < M) gemm_store_pair(out, fp32, r + 8, column, N, acc[j][4 * i + 2], acc[j][4 * i + 3]);
    }
  }
  if (split && counters != nullptr) {
    gemm_last_block_adds(y, partials, counters, M, N, output_fp32, block, row0, column0, BM, BN);
  }
#else
  __trap();  // sm_90a only: the launcher never picks these tiles elsewhere.
#endif
}
