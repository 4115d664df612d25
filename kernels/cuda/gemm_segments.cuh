// Several GEMMs that read the same x in one launch (gemm.cu's gemm_segments_*): y_s = x · w_sᵀ for up to
// GEMM_MOST_SEGMENTS segments sharing x, M and K, each with its own weights, output, N, K chunking and output dtype.
// Every segment runs gemm_tiles exactly as its own launch would (its chunk_tiles, the same tile configuration), so
// each output element has the bits of the separate launch. The grid concatenates the segments' column tiles (grid.x,
// or grid.y when ROWS_FASTEST); grid.z is the most chunks of any segment, and a block past its segment's chunks only
// waits for the previous grid and exits. A segment whose K is split writes fp32 partials [chunks, M, N_s] at its own
// offset of `partials` (the segments' partials one after another, each rounded up to 16 bytes), and
// gemm_segments_combine adds them for all segments in one launch, in ascending chunk order as gemm_combine does.
// Unused segments have N = 0 (no tiles, no elements).
#pragma once
#include "gemm_wgmma.cuh"

#define GEMM_MOST_SEGMENTS 4

// The kernels' parameters: what every segment shares, then (y, w, N, chunk_tiles) per segment. Bit s of fp32_mask
// makes segment s's output fp32; split_k says whether the tile configuration runs K chunks on separate blocks.
#define GEMM_SEGMENT_PARAMETERS                                                                                     \
  const bf16 *x, float *partials, int M, int K, int split_k, int fp32_mask, void *y0, const bf16 *w0, int n0,     \
      int chunk_tiles0, void *y1, const bf16 *w1, int n1, int chunk_tiles1, void *y2, const bf16 *w2, int n2,     \
      int chunk_tiles2, void *y3, const bf16 *w3, int n3, int chunk_tiles3

#define GEMM_SEGMENT_TABLE                                                                                          \
  GemmSegmentTable { {y0, y1, y2, y3}, {w0, w1, w2, w3}, {n0, n1, n2, n3}, {chunk_tiles0, chunk_tiles1, chunk_tiles2, \
                                                                          chunk_tiles3}, partials, M, K, split_k, fp32_mask }

struct GemmSegmentTable {
  void* y[GEMM_MOST_SEGMENTS];
  const bf16* w[GEMM_MOST_SEGMENTS];
  int n[GEMM_MOST_SEGMENTS];
  int chunk_tiles[GEMM_MOST_SEGMENTS];
  float* partials;
  int M;
  int K;
  int split_k;
  int fp32_mask;
};

// One segment as its own launch would see it. `first` is its first column tile (tile kernel) or its first element
// among the split segments' elements (combine); `found` is false past the last segment.
struct GemmSegment {
  void* y;
  const bf16* w;
  float* partials;
  int N;
  int chunk_tiles;
  int splits;
  int output_fp32;
  long long first;
  bool found;
};

// K chunks of segment s on separate blocks: the launcher's gemmChunks(N, K), or 1 when the configuration keeps them
// in registers.
__device__ __forceinline__ int gemm_segment_splits(const GemmSegmentTable& table, int s) {
  const int k_tiles = (table.K + GEMM_BK - 1) / GEMM_BK;
  const int chunk_tiles = max(table.chunk_tiles[s], 1);
  return table.split_k ? (k_tiles + chunk_tiles - 1) / chunk_tiles : 1;
}

// The segment holding `position`: a column tile of BN columns (BN > 0), or an element of a split segment (BN == 0).
template <int BN>
__device__ __forceinline__ GemmSegment gemm_segment_at(const GemmSegmentTable& table, long long position) {
  GemmSegment segment = {};
  long long first = 0;
  long long offset = 0;
#pragma unroll
  for (int s = 0; s < GEMM_MOST_SEGMENTS; s++) {
    const int splits = gemm_segment_splits(table, s);
    const long long elements = (long long)table.M * table.n[s];
    const long long extent = BN > 0 ? (table.n[s] + BN - 1) / max(BN, 1) : (splits > 1 ? elements : 0);
    if (!segment.found && position < first + extent) {
      segment.y = table.y[s];
      segment.w = table.w[s];
      segment.partials = table.partials + offset;
      segment.N = table.n[s];
      segment.chunk_tiles = max(table.chunk_tiles[s], 1);
      segment.splits = splits;
      segment.output_fp32 = (table.fp32_mask >> s) & 1;
      segment.first = first;
      segment.found = true;
    }
    first += extent;
    // Each split segment's partials start 16 bytes aligned, so its paired stores stay aligned.
    if (splits > 1) offset += (splits * elements + 3) & ~3LL;
  }
  return segment;
}

// The tile kernel of a segmented launch; SUM_TILES_OF_FIRST (the contract's control only) closes every segment's
// register sums at segment 0's chunk size instead of its own.
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool ROWS_FASTEST, bool SUM_TILES_OF_FIRST,
          int BK = GEMM_BK>
__device__ __forceinline__ void gemm_segments_tiles(const bf16* x, const GemmSegmentTable& table) {
  const int column_tile = ROWS_FASTEST ? blockIdx.y : blockIdx.x;
  const GemmSegment segment = gemm_segment_at<BN>(table, column_tile);
  if (!segment.found || (int)blockIdx.z >= segment.splits) {
    wait_for_previous_grids();
    return;
  }
  GemmBlock block;
  block.row_tile = ROWS_FASTEST ? blockIdx.x : blockIdx.y;
  block.column_tile = column_tile - (int)segment.first;
  block.chunk = blockIdx.z;
  block.splits = segment.splits;
  block.sum_tiles = SUM_TILES_OF_FIRST ? max(table.chunk_tiles[0], 1) : segment.chunk_tiles;
  gemm_tiles<BM, BN, WARPS_M, WARPS_N, STAGES, ROWS_FASTEST, false, BK>(segment.y, x, segment.w, segment.partials, nullptr,
                                                                    table.M, segment.N, table.K, segment.chunk_tiles,
                                                                    segment.output_fp32, block);
}

// The segmented launch on the wgmma tiles (gemm_wgmma.cuh): the same segment table and grid, 64 × BN tiles.
template <int BN, int STAGES, int KT>
__device__ __forceinline__ void gemm_segments_tiles_wgmma(const bf16* x, const GemmSegmentTable& table) {
  const GemmSegment segment = gemm_segment_at<BN>(table, blockIdx.x);
  if (!segment.found || (int)blockIdx.z >= segment.splits) {
    wait_for_previous_grids();
    return;
  }
  GemmBlock block;
  block.row_tile = blockIdx.y;
  block.column_tile = blockIdx.x - (int)segment.first;
  block.chunk = blockIdx.z;
  block.splits = segment.splits;
  gemm_tiles_wgmma<BN, STAGES, KT>(segment.y, x, segment.w, segment.partials, nullptr, table.M, segment.N, table.K,
                                   segment.chunk_tiles, segment.output_fp32, block);
}

// Elements of the split segments (the combine's threads).
__device__ __forceinline__ long long gemm_segments_split_elements(const GemmSegmentTable& table) {
  long long total_elements = 0;
#pragma unroll
  for (int s = 0; s < GEMM_MOST_SEGMENTS; s++) {
    if (gemm_segment_splits(table, s) > 1) total_elements += (long long)table.M * table.n[s];
  }
  return total_elements;
}

// Element `element` of a split segment of `elements`: its chunk partials added in ascending order (every combine's).
__device__ __forceinline__ float gemm_segment_total(const GemmSegment& segment, long long elements,
                                                    long long element) {
  return chunk_partials_total(segment.partials + element, elements, segment.splits);
}

// Element `element` of bf16 segment s as gemm_segments_combine leaves it: where s split, its chunk partials added in
// ascending order and rounded (and, with `store`, written as the combine writes it); where it did not, the tile
// kernel's store. For kernels that take a split launch's combine over (attention_qkv_prepare, delta_net_combine).
__device__ __forceinline__ bf16 gemm_segment_bf16(const GemmSegmentTable& table, int s, long long element, bool store) {
  bf16* y = static_cast<bf16*>(table.y[s]);
  if (gemm_segment_splits(table, s) == 1) return y[element];
  long long first = 0;
  for (int r = 0; r < s; r++) {
    if (gemm_segment_splits(table, r) > 1) first += (long long)table.M * table.n[r];
  }
  const GemmSegment segment = gemm_segment_at<0>(table, first + element);
  const bf16 total = to_bf16(gemm_segment_total(segment, (long long)table.M * table.n[s], element));
  if (store) y[element] = total;
  return total;
}

// The element at `index` among the split segments' elements: its total, stored once as its segment's output.
__device__ __forceinline__ void gemm_segments_combine_element(const GemmSegmentTable& table, long long index) {
  const GemmSegment segment = gemm_segment_at<0>(table, index);
  const long long elements = (long long)table.M * segment.N;
  const long long element = index - segment.first;
  const float total = gemm_segment_total(segment, elements, element);
  if (segment.output_fp32) {
    static_cast<float*>(segment.y)[element] = total;
  } else {
    static_cast<bf16*>(segment.y)[element] = to_bf16(total);
  }
}

// One thread per element of the split segments: its chunk partials in ascending order, then the one rounding.
__device__ __forceinline__ void gemm_segments_add_partials(const GemmSegmentTable& table) {
  const long long total_elements = gemm_segments_split_elements(table);
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total_elements;
       index += (long long)gridDim.x * blockDim.x) {
    gemm_segments_combine_element(table, index);
  }
}
