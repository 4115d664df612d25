// How the codec's tensor-core conv (codec_conv_mma.cuh) fills shared memory: its block shapes, the fp16 weights of a
// stage by cp.async, and the stage's fp16 input tile. Where the inputs' rows are 16-byte aligned, the next stage's
// inputs are copied raw (fp32, by cp.async) while this stage is summed, then put through Snake and rounded to fp16
// from shared memory; elsewhere they are loaded and rounded in place. Either way a staged input is
// fp16(conv_input(...)), rounded once: the same value whichever path or block shape staged it.
#pragma once
#include "codec_conv_tiled.cuh"

constexpr int MMA_THREADS = 256;
constexpr int MMA_WARPS = MMA_THREADS / 32;
constexpr int MMA_WARP_ROWS = 32;     // two m16 tiles
constexpr int MMA_WARP_OUTPUTS = 64;  // eight n8 tiles
constexpr int MMA_ROW_TILES = MMA_WARP_ROWS / 16;
constexpr int MMA_OUTPUT_TILES = MMA_WARP_OUTPUTS / 8;
// Layers of at most this many outputs take the tall shape: every warp along rows, none multiplying zero weights.
constexpr int MMA_TALL_OUTPUTS = MMA_WARP_OUTPUTS;

// A block's shape, by the layer's outputs: 128 rows × 128 outputs (8 warps of 32 × 64, 4 along rows), or for at most
// 64 outputs 256 rows × 64 outputs (all 8 along rows). One code path serves both, so that the kernel's registers are
// those of one shape.
struct MmaShape {
  int outputs;  // a block's
  int warps_along_rows;
  int rows;           // a block's
  int weight_stride;  // halfs between staged weight rows, 8 past the outputs: ldmatrix's 8 rows in 8 bank groups
};
__host__ __device__ constexpr MmaShape mma_shape(int outputs) {
  constexpr int WIDE = 2 * MMA_TALL_OUTPUTS;
  return outputs <= MMA_TALL_OUTPUTS
             ? MmaShape{MMA_TALL_OUTPUTS, MMA_WARPS, MMA_WARPS * MMA_WARP_ROWS, MMA_TALL_OUTPUTS + 8}
             : MmaShape{WIDE, MMA_WARPS / 2, MMA_WARPS / 2 * MMA_WARP_ROWS, WIDE + 8};
}

// Shared bytes before the stage buffers: each tile row's row of out (long long).
__host__ __device__ constexpr int mma_rows_table_bytes(const MmaShape& shape) { return shape.rows * 8; }
// fp32 elements between a tile's rows of sums in the epilogue: 8 past the outputs, so that each half-warp's float2
// stores (4 rows × 8 outputs) fall in distinct banks.
__host__ __device__ constexpr int mma_sums_stride(const MmaShape& shape) { return shape.outputs + 8; }

// Input channels a stage of the wide shape: more for short kernels, whose stages would otherwise hold few sums per
// barrier. A group's width is summed in whole quanta of this many channels (zero ones padding the last).
__host__ __device__ constexpr int mma_stage_quantum(int kernel) { return kernel == 1 ? 64 : kernel <= 2 ? 32 : 16; }
// Input channels a stage. At k = 1 a group's chain is its 16-channel slices ascending however they are staged, so the
// tall shape stages half a quantum, which keeps its raw inputs within two blocks an SM.
__host__ __device__ constexpr int mma_stage_channels(int kernel, int block_outputs) {
  return kernel == 1 && block_outputs == MMA_TALL_OUTPUTS ? 32 : mma_stage_quantum(kernel);
}
// Input channels a group: a whole number of stages.
__host__ __device__ constexpr int mma_group_channels(int kernel) { return kernel == 1 ? 128 : 64; }
// Halfs between staged input rows: S + 8 keeps each ldmatrix row in its own bank group.
__host__ __device__ constexpr int mma_input_stride(int channels) { return channels + 8; }

// The raw path's copies read x and the history 4 channels at a time: every row and the stage's first channel 16-byte
// aligned (the stages start at multiples of 16 channels, and a stage's channel count is then a multiple of 4).
__device__ __forceinline__ bool mma_inputs_align(const float* x, long long x_stride, const float* history,
                                                 int history_rows, int inputs) {
  const bool history_aligned = history_rows == 0 || reinterpret_cast<unsigned long long>(history) % 16 == 0;
  return reinterpret_cast<unsigned long long>(x) % 16 == 0 && x_stride % 4 == 0 && inputs % 4 == 0 && history_aligned;
}

// A power of two's division and remainder as a shift and a mask. The stage copies index every 16-byte piece by
// (tap, channel, piece) or (row, piece), and every one of those extents is a power of two (a stage's channels, a
// block's outputs / 8, a stage's channels / 8); a division by a runtime value costs a dozen integer instructions a
// use, which in the copy loops outnumbered the tensor-core instructions of a stage. Exact for non-negative indices.
struct PowerOfTwo {
  int shift;
  __device__ __forceinline__ explicit PowerOfTwo(int value) : shift(__ffs(value) - 1) {}
  __device__ __forceinline__ int divide(int x) const { return x >> shift; }
  __device__ __forceinline__ int remainder(int x) const { return x & ((1 << shift) - 1); }
};

// Stages the weights of channels [first, first + count) for every tap into `target` [tap][c][stride]: by 16-byte
// cp.async when Cout is a multiple of 8 (the caller commits and waits), else element by element; zeros elsewhere,
// so that padded channels and outputs add exact zeros.
template <int FAULT>
__device__ __forceinline__ void mma_stage_weights(__half* target, const __half* weight, int first, int count,
                                                  int kernel, int channels, int outputs, int block_output,
                                                  const MmaShape& shape) {
  if (outputs % 8 == 0) {
    // A thread copies the same 16-byte piece of every (tap, channel) row it takes: MMA_THREADS is a multiple of the
    // pieces a row.
    const PowerOfTwo per_row(shape.outputs / 8), per_tap(channels);
    const int part = per_row.remainder(threadIdx.x);
    const int output = block_output + part * 8;
    const int rows_a_pass = per_row.divide(MMA_THREADS);
    for (int row = per_row.divide(threadIdx.x); row < kernel * channels; row += rows_a_pass) {
      const int c = per_tap.remainder(row);
      const int tap = per_tap.divide(row);
      const int source_tap = FAULT == CODEC_FAULT_TAPS_REVERSED ? kernel - 1 - tap : tap;
      const bool valid = c < count && output < outputs;
      const __half* source =
          weight + (valid ? ((long long)(first + c) * kernel + source_tap) * outputs + output : 0);
      tiled_copy_16(target + row * shape.weight_stride + part * 8, source, valid);
    }
    return;
  }
  for (int index = threadIdx.x; index < kernel * channels * shape.outputs; index += MMA_THREADS) {
    const int o = index % shape.outputs;
    const int c = (index / shape.outputs) % channels;
    const int tap = index / (shape.outputs * channels);
    const int source_tap = FAULT == CODEC_FAULT_TAPS_REVERSED ? kernel - 1 - tap : tap;
    const int output = block_output + o;
    target[(tap * channels + c) * shape.weight_stride + o] =
        c < count && output < outputs ? weight[((long long)(first + c) * kernel + source_tap) * outputs + output]
                                      : __float2half_rn(0.0f);
  }
}

// One stage's input tile: rows first − H .. first + block rows − 1 of one sequence, channels base .. base + count.
struct MmaInputTile {
  long long first;
  int history_rows;
  int tile_rows;
  int channels;  // staged a stage (S)
  int base;
  int count;
  int reach;  // 1 in the off-by-one history control: carried rows read one row further back
};

// Where conv_input reads input row `row` (tile row r's, after the control's reach) of channel `channel`; null where
// it reads zero.
__device__ __forceinline__ const float* mma_input_source(const float* x, long long x_stride, const float* history,
                                                         const CodecSequence& sequence, int history_rows, int inputs,
                                                         long long row, int channel) {
  if (row >= sequence.row_count || row < -history_rows) return nullptr;
  if (row >= 0) return x + (sequence.first_row + row) * x_stride + channel;
  return history + ((long long)sequence.slot * history_rows + history_rows + row) * inputs + channel;
}

__device__ __forceinline__ long long mma_tile_row(const MmaInputTile& tile, int r) {
  const long long row = tile.first - tile.history_rows + r;
  return row < 0 ? row - tile.reach : row;
}

// The raw path's copy: the tile's fp32 values [r][S] by 16-byte cp.async (zeros where conv_input reads zero); the
// caller commits and waits.
__device__ __forceinline__ void mma_copy_raw_inputs(float* raw, const float* x, long long x_stride,
                                                    const float* history, const CodecSequence& sequence, int inputs,
                                                    const MmaInputTile& tile) {
  const int copies_per_row = tile.channels / 4;
  for (int index = threadIdx.x; index < tile.tile_rows * copies_per_row; index += MMA_THREADS) {
    const int c = (index % copies_per_row) * 4;
    const int r = index / copies_per_row;
    const float* source = c < tile.count ? mma_input_source(x, x_stride, history, sequence, tile.history_rows, inputs,
                                                            mma_tile_row(tile, r), tile.base + c)
                                         : nullptr;
    tiled_copy_16(raw + r * tile.channels + c, source != nullptr ? source : x, source != nullptr);
  }
}

// The raw path's rounding: conv_input's value from the copied one (Snake on this call's rows, the carried history
// and the zeros as they are), rounded to fp16 into the tile [r][S + 8]. A thread's channel pair is the same on every
// row (the block's threads are a multiple of the pairs), so its α and 1/(α + 1e-9) are read and computed once.
template <int FAULT>
__device__ __forceinline__ void mma_round_raw_inputs(__half* staged, const float* raw, const float* alpha,
                                                     const CodecSequence& sequence, const MmaInputTile& tile) {
  const int pairs = tile.channels / 2;
  const int stride = mma_input_stride(tile.channels);
  static_assert(MMA_THREADS % (mma_stage_quantum(1) / 2) == 0, "a thread must keep its channel pair on every row");
  const int c = (threadIdx.x % pairs) * 2;
  const int channel = tile.base + c;
  const bool has_alpha = alpha != nullptr;
  const float alpha_low = has_alpha && c < tile.count ? __ldg(alpha + channel) : 0.0f;
  const float alpha_high = has_alpha && c + 1 < tile.count ? __ldg(alpha + channel + 1) : 0.0f;
  const float inverse_low = snake_inverse(alpha_low);
  const float inverse_high = snake_inverse(alpha_high);
#pragma unroll 4
  for (int index = threadIdx.x; index < tile.tile_rows * pairs; index += MMA_THREADS) {
    const int r = index / pairs;
    const long long row = mma_tile_row(tile, r);
    const bool snaked = has_alpha && row >= 0 && row < sequence.row_count;
    const float2 value = *reinterpret_cast<const float2*>(raw + r * tile.channels + c);
    const float low = c < tile.count ? (snaked ? snake_with<FAULT>(value.x, alpha_low, inverse_low) : value.x) : 0.0f;
    const float high =
        c + 1 < tile.count ? (snaked ? snake_with<FAULT>(value.y, alpha_high, inverse_high) : value.y) : 0.0f;
    *reinterpret_cast<__half2*>(staged + r * stride + c) = __floats2half2_rn(low, high);
  }
}

// The direct path (rows not 16-byte aligned): each value loaded through conv_input and rounded to fp16 in place.
template <int FAULT>
__device__ __forceinline__ void mma_load_inputs(__half* staged, const float* x, long long x_stride, const float* alpha,
                                                const float* history, const CodecSequence& sequence, int inputs,
                                                const MmaInputTile& tile) {
  const int pairs = tile.channels / 2;
  const int stride = mma_input_stride(tile.channels);
#pragma unroll 4
  for (int index = threadIdx.x; index < tile.tile_rows * pairs; index += MMA_THREADS) {
    const int c = (index % pairs) * 2;
    const int r = index / pairs;
    const long long row = mma_tile_row(tile, r);
    const int h = tile.history_rows;
    const float low =
        c < tile.count ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, h, inputs, row, tile.base + c) : 0.0f;
    const float high = c + 1 < tile.count
                           ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, h, inputs, row, tile.base + c + 1)
                           : 0.0f;
    *reinterpret_cast<__half2*>(staged + r * stride + c) = __floats2half2_rn(low, high);
  }
}

// The staged entries' inputs (codec_conv_stage_f16 writes them once a layer): fp16(conv_input(...)) of each sequence's
// carried rows then its rows, one region a sequence in table order, [padded row][stride]; stride is Cin rounded up
// to 8 (the channels past Cin zero), so that every 8-channel piece is one 16-byte copy. Region z starts at padded
// row firstRow·row_scale + z·H: a table's sequences come in ascending rows that do not overlap, so no two regions do.
// Output row t of a sequence reads the H padded rows before its own, its carried rows and earlier rows: the conv of
// a region is a conv without history. So a flat tiling may run the whole call as one: tiles over padded rows, a
// tile crossing regions, each output row found by its region (carried rows and gaps write nothing). Each output row
// still reads the same fp16 values in the same order: the same bits in either tiling.
struct MmaStagedRows {
  const __half* rows;
  long long padded_rows;  // the tiling's extent: every region of the call and any gaps between them
  int stride;
  bool flat;
};

__device__ __forceinline__ long long mma_region_start(const int* sequences, int index, int row_scale,
                                                      int history_rows) {
  return (long long)sequences[4 * index + 1] * row_scale + (long long)index * history_rows;
}

// Padded row p's row of out, or −1 (a carried row, a gap, or past the last region): the last region starting at or
// before p, found by bisection of the table.
__device__ __forceinline__ long long mma_padded_output_row(const int* sequences, int count, int row_scale,
                                                           int history_rows, long long p) {
  if (count < 1 || mma_region_start(sequences, 0, row_scale, history_rows) > p) return -1;
  int low = 0;
  int high = count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (mma_region_start(sequences, middle, row_scale, history_rows) <= p) low = middle;
    else high = middle - 1;
  }
  const CodecSequence sequence = codec_sequence(sequences, low, row_scale);
  const long long row = p - mma_region_start(sequences, low, row_scale, history_rows) - history_rows;
  return row >= 0 && row < sequence.row_count ? sequence.first_row + row : -1;
}

// The staged path's copy: the stage's fp16 input tile [r][S + 8] by 16-byte cp.async from padded rows
// `base + first − H + r` (zeros before the first padded row, past the last, and past the stride); the caller commits
// and waits. The history control reads every row one row further back.
template <int FAULT>
__device__ __forceinline__ void mma_copy_staged_inputs(__half* target, const MmaStagedRows& staged, long long base,
                                                       const MmaInputTile& tile) {
  // As the weights': a thread copies the same 8 channels of every row it takes.
  const PowerOfTwo per_row(tile.channels / 8);
  const int stride = mma_input_stride(tile.channels);
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int c = per_row.remainder(threadIdx.x) * 8;
  const int channel = tile.base + c;
  const long long first_row = base + tile.first - tile.history_rows - reach;
  const int rows_a_pass = per_row.divide(MMA_THREADS);
  for (int r = per_row.divide(threadIdx.x); r < tile.tile_rows; r += rows_a_pass) {
    const long long row = first_row + r;
    const bool valid = channel < staged.stride && row >= 0 && row < staged.padded_rows;
    const __half* source = valid ? staged.rows + row * staged.stride + channel : staged.rows;
    tiled_copy_16(target + r * stride + c, source, valid);
  }
}

// codec_conv_stage_f16: every value a staged conv of this call reads, once: rows −H .. rowCount − 1 of each sequence
// (block z) through conv_input (Snake on x, the carried rows as they are) rounded to fp16 into its region, the
// channels past Cin written as zeros. A block covers MMA_STAGE_ROWS padded rows; each thread keeps four adjacent
// channels on every row it takes, so it reads their α and computes 1/(α + 1e-9) once, loads them as one 16-byte
// piece where the rows align and stores them as one 8-byte piece: the values of conv_input, so the same bits.
constexpr int MMA_STAGE_ROWS = 32;

template <int FAULT>
__device__ __forceinline__ void mma_stage_rows(__half* staged, int staged_stride, const float* x, long long x_stride,
                                               const float* alpha, const float* history, const int* sequences,
                                               int row_scale, int inputs, int history_rows) {
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const long long region = mma_region_start(sequences, blockIdx.z, row_scale, history_rows);
  const long long padded = (long long)history_rows + sequence.row_count;
  const int quads = staged_stride / 4;  // staged_stride is a multiple of 8
  const int per_row = min(quads, (int)blockDim.x);
  const int rows_a_pass = blockDim.x / per_row;
  const int sub = threadIdx.x / per_row;
  if (sub >= rows_a_pass) return;
  const float* slab = history + (long long)sequence.slot * history_rows * inputs;
  const bool aligned = reinterpret_cast<unsigned long long>(x) % 16 == 0 && x_stride % 4 == 0 && inputs % 4 == 0 &&
                       (history_rows == 0 || reinterpret_cast<unsigned long long>(slab) % 16 == 0);
  for (int quad = threadIdx.x % per_row; quad < quads; quad += per_row) {
    const int c = 4 * quad;
    float alphas[4], inverses[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
      alphas[e] = alpha != nullptr && c + e < inputs ? __ldg(alpha + c + e) : 0.0f;
      inverses[e] = snake_inverse(alphas[e]);
    }
    for (long long first = (long long)blockIdx.x * MMA_STAGE_ROWS; first < padded;
         first += (long long)gridDim.x * MMA_STAGE_ROWS) {
      const int rows = (int)min((long long)MMA_STAGE_ROWS, padded - first);
      for (int r = sub; r < rows; r += rows_a_pass) {
        const long long row = first + r - history_rows;
        // conv_input's source: this call's x for row ≥ 0, the carried rows (after Snake already) before it.
        const float* source = row >= 0 ? x + (sequence.first_row + row) * x_stride + c
                                       : slab + (history_rows + row) * inputs + c;
        float values[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (aligned && c < inputs) {
          const float4 piece = __ldg(reinterpret_cast<const float4*>(source));
          values[0] = piece.x, values[1] = piece.y, values[2] = piece.z, values[3] = piece.w;
        } else {
#pragma unroll
          for (int e = 0; e < 4; e++) values[e] = c + e < inputs ? __ldg(source + e) : 0.0f;
        }
        if (alpha != nullptr && row >= 0) {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            if (c + e < inputs) values[e] = snake_with<FAULT>(values[e], alphas[e], inverses[e]);
          }
        }
        const __half2 low = __floats2half2_rn(values[0], values[1]);
        const __half2 high = __floats2half2_rn(values[2], values[3]);
        uint2 bits;
        bits.x = *reinterpret_cast<const unsigned*>(&low);
        bits.y = *reinterpret_cast<const unsigned*>(&high);
        *reinterpret_cast<uint2*>(staged + (region + history_rows + row) * staged_stride + c) = bits;
      }
    }
  }
}

#define CODEC_STAGE_ENTRY(name, FAULT)                                                                              \
  extern "C" __global__ void __launch_bounds__(MMA_THREADS)                                                         \
      name(__half* staged, int staged_stride, const float* x, long long x_stride, const float* alpha,               \
           const float* history, const int* sequences, int row_scale, int inputs, int history_rows) {               \
    KERNEL_PROLOGUE();                                                                                              \
    mma_stage_rows<FAULT>(staged, staged_stride, x, x_stride, alpha, history, sequences, row_scale, inputs,         \
                          history_rows);                                                                            \
  }
