// The codec's causal dilated conv on tensor cores (the `f16` precision: fp16 weights and fp16 inputs, fp32 sums, as
// the release's vocoder runs): an implicit GEMM over (input channel, tap) with m16n8k16 mma.sync. Block = 128 rows
// of one sequence × 128 outputs, 8 warps of 32 rows × 64 outputs, or for layers of at most 64 outputs 256 rows × 64
// outputs (codec_conv_mma_staging.cuh). Each stage stages S input channels of the tile's rows (t0 − H .. the tile's
// last, through Snake, rounded to fp16 once) and their weights for every tap; the next stage's weights and raw inputs
// are copied by cp.async while this one is summed. Input channels fall in groups of G (64, or 128 at k = 1): each
// group's sum is one fp32 accumulator chain from zero (its stages ascending, then taps ascending, then the stage's
// 16-channel slices ascending), and the groups' sums are added in ascending order. An mma computes each element of D
// from its own row of A and column of B, so a row's bits depend on the layer's sizes alone, never on the tile, the
// call or the lanes beside it. The split entry gives each group its own blocks (for calls of few rows, whose
// unsplit grid would leave most of the GPU idle) and writes the groups' sums; codec_conv_combine adds them in the
// same order with the same epilogue, so split and unsplit give the same bits. The staged entries read the inputs
// that codec_conv_stage_f16 put through Snake and rounded once for the whole layer (fp16 rows, by cp.async, two
// tiles in flight) instead of each block staging its own: the same fp16 values, so the same bits, with each value's
// Snake computed once rather than once per output block and overlapping row tile. A transposed conv runs here too,
// as a conv over its input rows with s·Cout outputs (codecWeightLayout.ts codecTransposedAsConvLayout). A tile's
// sums leave through shared memory (the stage buffers, free after its last stage), a row of outputs at a time, so
// the epilogue reads and writes whole sectors and its code exists once; each tile row's row of out is looked up
// once a tile into a table at the front of shared memory.
#pragma once
#include "codec_conv_mma_staging.cuh"

// ldmatrix at a shared-state-space byte address: the inner loop keeps 32-bit addresses and adds offsets, rather
// than converting a generic pointer for every load.
__device__ __forceinline__ void mma_ldmatrix_x4(uint32_t (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void mma_ldmatrix_x4_trans(uint32_t (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ unsigned mma_shared_address(const void* shared) {
  return static_cast<unsigned>(__cvta_generic_to_shared(shared));
}
__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A group's chain starts from zero.
__device__ __forceinline__ void mma_zero(float (&sums)[MMA_ROW_TILES][MMA_OUTPUT_TILES][4]) {
#pragma unroll
  for (int m = 0; m < MMA_ROW_TILES; m++)
#pragma unroll
    for (int n = 0; n < MMA_OUTPUT_TILES; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) sums[m][n][e] = 0.0f;
}

// Stages in group `group`: its width in whole quanta, each of quantum / S stages, so that both shapes sum the same
// slices (the zero ones past the last channel too).
__device__ __forceinline__ int mma_group_stages(int group, int inputs, int kernel, int channels) {
  const int width = min(mma_group_channels(kernel), inputs - group * mma_group_channels(kernel));
  const int quantum = mma_stage_quantum(kernel);
  return (width + quantum - 1) / quantum * (quantum / channels);
}

// The first channel of the `step`-th stage a block sums: its one group's (split), else every group's in ascending
// order (the control takes the groups last to first in calls of several lanes, an accurate result in another order
// that only the invariance gate can see).
template <int FAULT, bool SPLIT>
__device__ __forceinline__ int mma_stage_base(int step, int group, int inputs, int kernel, int channels, int lanes) {
  const int group_channels = mma_group_channels(kernel);
  if (SPLIT) return group * group_channels + step * channels;
  if (FAULT == CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES && lanes > 1) {
    for (int g = (inputs + group_channels - 1) / group_channels - 1;; g--) {
      const int stages = mma_group_stages(g, inputs, kernel, channels);
      if (step < stages) return g * group_channels + step * channels;
      step -= stages;
    }
  }
  return step * channels;
}

template <int FAULT, bool SPLIT, bool STAGED>
__device__ __forceinline__ void mma_conv(float* out, long long out_stride, const float* x, long long x_stride,
                                         const __half* weight, const float* bias, const float* alpha,
                                         const float* residual, long long residual_stride, const float* scale,
                                         const float* history, const int* sequences, int row_scale, int inputs,
                                         int outputs, int kernel, int dilation, int activation, float* partials,
                                         long long partial_rows, const __half* staged, long long staged_rows,
                                         int staged_stride, int staged_sequences, int staged_flat) {
  const MmaShape shape = mma_shape(outputs);
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int channels = mma_stage_channels(kernel, shape.outputs);
  const int input_stride = mma_input_stride(channels);
  const int weight_elements = kernel * channels * shape.weight_stride;
  const int history_rows = (kernel - 1) * dilation;
  const int tile_rows = shape.rows + history_rows;
  // [the tile's rows of out][2 weight buffers][the fp16 input tile, two when staged][the raw fp32 inputs of the next
  // stage, when not staged]; after a tile's last stage the buffers hold its sums [rows][block outputs + 8] fp32.
  long long* rows_at = reinterpret_cast<long long*>(shared_bytes);
  __half* staged_weights = reinterpret_cast<__half*>(shared_bytes + mma_rows_table_bytes(shape));
  float* tile_sums = reinterpret_cast<float*>(staged_weights);
  const int sums_stride = mma_sums_stride(shape);
  __half* staged_inputs = staged_weights + 2 * weight_elements;
  float* raw_inputs = reinterpret_cast<float*>(staged_inputs + tile_rows * input_stride);
  const bool copies_raw = !STAGED && mma_inputs_align(x, x_stride, history, history_rows, inputs);
  const MmaStagedRows padded{staged, staged_rows, staged_stride, staged_flat != 0};
  const bool flat = STAGED && padded.flat;
  const CodecSequence sequence = codec_sequence(sequences, flat ? 0 : blockIdx.z, row_scale);
  // The tiling's rows: the call's padded rows (flat), else the block's sequence's rows, staged at its region's.
  const long long tiled_rows = flat ? padded.padded_rows : sequence.row_count;
  const long long padded_base =
      !STAGED || flat ? 0 : mma_region_start(sequences, blockIdx.z, row_scale, history_rows) + history_rows;
  const int lanes = STAGED ? staged_sequences : gridDim.z;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warp_row = (warp % shape.warps_along_rows) * MMA_WARP_ROWS;
  const int warp_output = (warp / shape.warps_along_rows) * MMA_WARP_OUTPUTS;
  const int output_blocks = (outputs + shape.outputs - 1) / shape.outputs;
  const int group = SPLIT ? blockIdx.x / output_blocks : 0;
  const int block_output = (blockIdx.x % output_blocks) * shape.outputs;
  const int group_channels = mma_group_channels(kernel);
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int quantum = mma_stage_quantum(kernel);
  const int stages = SPLIT ? mma_group_stages(group, inputs, kernel, channels)
                           : (inputs + quantum - 1) / quantum * (quantum / channels);
  const long long tiles = (tiled_rows + shape.rows - 1) / shape.rows;
  // The lane's ldmatrix addresses in buffer 0 at tap 0, slice 0 (A: its row of the warp's first m16 tile and its
  // 8-channel half; B: its channel row and 8 outputs of the warp's first n8 pair), and the byte steps between them.
  const unsigned inputs_lane =
      mma_shared_address(staged_inputs + (warp_row + lane % 16) * input_stride + (lane / 16) * 8);
  const unsigned weights_lane = mma_shared_address(
      staged_weights + ((lane / 8) % 2 * 8 + lane % 8) * shape.weight_stride + warp_output + lane / 16 * 8);
  const unsigned input_tile_step = 2 * 16 * input_stride;
  const unsigned input_buffer_bytes = 2 * tile_rows * input_stride;
  const unsigned weight_buffer_bytes = 2 * weight_elements;
  for (long long row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = row_tile * shape.rows;
    const auto tile_of = [&](int step) {
      const int base = mma_stage_base<FAULT, SPLIT>(step, group, inputs, kernel, channels, lanes);
      return MmaInputTile{first, history_rows, tile_rows, channels, base, max(0, min(channels, inputs - base)), reach};
    };
    // The copies of a stage: its weights into `buffer`, and its staged fp16 inputs into that input tile, or its raw
    // inputs where the rows align; one commit group.
    const auto copy_stage = [&](int step, int buffer) {
      const MmaInputTile tile = tile_of(step);
      mma_stage_weights<FAULT>(staged_weights + buffer * weight_elements, weight, tile.base, tile.count, kernel,
                               channels, outputs, block_output, shape);
      if (STAGED) {
        mma_copy_staged_inputs<FAULT>(staged_inputs + buffer * tile_rows * input_stride, padded, padded_base, tile);
      }
      if (copies_raw) mma_copy_raw_inputs(raw_inputs, x, x_stride, history, sequence, inputs, tile);
      tiled_commit();
    };
    float sums[MMA_ROW_TILES][MMA_OUTPUT_TILES][4];  // this group's chain
    mma_zero(sums);
    bool first_group = true;
    // Each tile row's row of out, or −1 (past the rows, or a padded row that writes nothing): read after the first
    // stage's barrier.
    for (int r = threadIdx.x; r < shape.rows; r += MMA_THREADS) {
      const long long row = first + r;
      rows_at[r] = row >= tiled_rows ? -1
                   : flat ? mma_padded_output_row(sequences, staged_sequences, row_scale, history_rows, row)
                          : sequence.first_row + row;
    }
    // Each of the thread's pairs of adjacent outputs in a row that exists: f(low sum, high sum, index in out, the
    // pair's first output), which may be past the outputs (and its second may be).
    const auto for_each_pair = [&](auto f) {
#pragma unroll
      for (int m = 0; m < MMA_ROW_TILES; m++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
          const long long at = rows_at[warp_row + m * 16 + lane / 4 + half * 8];
          if (at < 0) continue;
#pragma unroll
          for (int n = 0; n < MMA_OUTPUT_TILES; n++) {
            const int output = block_output + warp_output + n * 8 + 2 * (lane % 4);
            f(sums[m][n][2 * half], sums[m][n][2 * half + 1], at, output);
          }
        }
      }
    };
    copy_stage(0, 0);
    int buffer = 0;
    for (int step = 0; step < stages; step++) {
      const MmaInputTile tile = tile_of(step);
      if (STAGED) {
        tiled_wait_all();
        __syncthreads();  // this stage's tiles are in, and every warp is done with the other buffers
      } else {
        if (copies_raw) tiled_wait_all();
        __syncthreads();  // every warp is done with the input tile and the other weight buffer; the raw inputs are in
        if (copies_raw) {
          mma_round_raw_inputs<FAULT>(staged_inputs, raw_inputs, alpha, sequence, tile);
        } else {
          mma_load_inputs<FAULT>(staged_inputs, x, x_stride, alpha, history, sequence, inputs, tile);
          tiled_wait_all();  // the weights, copied while the inputs loaded
        }
        __syncthreads();  // the input tile is whole and the raw inputs are free: the next stage's copies overlap
      }
      if (step + 1 < stages) copy_stage(step + 1, buffer ^ 1);
      // This lane's ldmatrix rows at tap 0, slice 0: output row t reads input row t − (K − 1 − tap)·d, staged at
      // t + tap·d; the weights' rows are [tap][c]. Each (tap, slice) then adds one offset to each.
      const unsigned inputs_at = inputs_lane + (STAGED ? buffer * input_buffer_bytes : 0);
      const unsigned weights_at = weights_lane + buffer * weight_buffer_bytes;
      for (int tap = 0; tap < kernel; tap++) {
        for (int slice = 0; slice < channels; slice += 16) {
          const unsigned input_offset = 2 * (tap * dilation * input_stride + slice);
          const unsigned weight_offset = 2 * (tap * channels + slice) * shape.weight_stride;
          uint32_t a[MMA_ROW_TILES][4];
#pragma unroll
          for (int m = 0; m < MMA_ROW_TILES; m++) {
            mma_ldmatrix_x4(a[m], inputs_at + input_offset + m * input_tile_step);
          }
#pragma unroll
          for (int n = 0; n < MMA_OUTPUT_TILES; n += 2) {
            uint32_t b[4];
            mma_ldmatrix_x4_trans(b, weights_at + weight_offset + 2 * n * 8);
#pragma unroll
            for (int m = 0; m < MMA_ROW_TILES; m++) {
              mma_f16(sums[m][n], a[m], b[0], b[1]);
              mma_f16(sums[m][n + 1], a[m], b[2], b[3]);
            }
          }
        }
      }
      buffer ^= 1;
      // At a group's last stage but the last, the unsplit kernel adds the group's sum to those before it, kept in
      // this thread's own elements of out (registers would hold two sets of sums), and starts the next.
      if (!SPLIT && step + 1 < stages && (tile.base + channels) % group_channels == 0) {
        // A thread's two adjacent outputs as one 8-byte access where out allows it (whole sectors), else one by one.
        const bool paired = out_stride % 2 == 0 && reinterpret_cast<unsigned long long>(out) % 8 == 0;
        for_each_pair([&](float low, float high, long long at, int output) {
          float* total = out + at * out_stride + output;
          if (paired && output + 1 < outputs) {
            float2 value = make_float2(low, high);
            if (!first_group) {
              const float2 before = *reinterpret_cast<const float2*>(total);
              value = make_float2(__fadd_rn(before.x, low), __fadd_rn(before.y, high));
            }
            *reinterpret_cast<float2*>(total) = value;
          } else {
            if (output < outputs) total[0] = first_group ? low : __fadd_rn(total[0], low);
            if (output + 1 < outputs) total[1] = first_group ? high : __fadd_rn(total[1], high);
          }
        });
        mma_zero(sums);
        first_group = false;
      }
    }
    if (SPLIT) {
      for_each_pair([&](float low, float high, long long at, int output) {
        float* partial = partials + ((long long)group * partial_rows + at) * outputs + output;
        if (output < outputs) partial[0] = low;
        if (output + 1 < outputs) partial[1] = high;
      });
    } else {
      // The epilogue through shared memory: each warp leaves its sums in the free stage buffers, then the block
      // walks the tile a row at a time, consecutive threads on consecutive outputs (whole sectors of out and the
      // residual, and one copy of the epilogue's code rather than one per register).
      __syncthreads();  // every warp is done with the stage buffers
#pragma unroll
      for (int m = 0; m < MMA_ROW_TILES; m++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
          const int r = warp_row + m * 16 + lane / 4 + half * 8;
#pragma unroll
          for (int n = 0; n < MMA_OUTPUT_TILES; n++) {
            const int o = warp_output + n * 8 + 2 * (lane % 4);
            *reinterpret_cast<float2*>(tile_sums + r * sums_stride + o) =
                make_float2(sums[m][n][2 * half], sums[m][n][2 * half + 1]);
          }
        }
      }
      __syncthreads();
      const PowerOfTwo per_row(shape.outputs);
      for (int index = threadIdx.x; index < shape.rows * shape.outputs; index += MMA_THREADS) {
        const int r = per_row.divide(index);
        const int o = per_row.remainder(index);
        const int output = block_output + o;
        const long long at = rows_at[r];
        if (at < 0 || output >= outputs) continue;
        const float sum = tile_sums[r * sums_stride + o];
        float* target = out + at * out_stride + output;
        const float total = first_group ? sum : __fadd_rn(*target, sum);
        *target = conv_epilogue(total, bias, scale, residual, residual_stride, at, output, activation);
      }
    }
    __syncthreads();  // the next tile's first stage overwrites the buffers
  }
}

// The split groups' sums → the conv's outputs: per (row, output) the groups added in ascending order from group 0,
// then the conv epilogue, exactly as the unsplit kernel ends. Block = 128 outputs × 8 rows of one sequence.
template <int FAULT>
__device__ __forceinline__ void mma_combine(float* out, long long out_stride, const float* partials,
                                            long long partial_rows, int groups, const float* bias,
                                            const float* residual, long long residual_stride, const float* scale,
                                            const int* sequences, int row_scale, int outputs, int activation) {
  const int output = blockIdx.x * CODEC_THREADS + threadIdx.x;
  if (output >= outputs) return;
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  for (long long row = (long long)blockIdx.y * CODEC_ROWS; row < sequence.row_count;
       row += (long long)gridDim.y * CODEC_ROWS) {
    for (int r = 0; r < CODEC_ROWS && row + r < sequence.row_count; r++) {
      const long long at = sequence.first_row + row + r;
      float total = partials[at * outputs + output];
      for (int g = 1; g < groups; g++) {
        const int source = FAULT == CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES ? groups - g : g;
        total = __fadd_rn(total, partials[((long long)source * partial_rows + at) * outputs + output]);
      }
      out[at * out_stride + output] =
          conv_epilogue(total, bias, scale, residual, residual_stride, at, output, activation);
    }
  }
}

#define CODEC_MMA_SIGNATURE(name)                                                                                   \
  name(float* out, long long out_stride, const float* x, long long x_stride, const __half* weight, const float* bias, \
       const float* alpha, const float* residual, long long residual_stride, const float* scale,                      \
       const float* history, const int* sequences, int row_scale, int inputs, int outputs, int kernel, int dilation,  \
       int activation, float* partials, long long partial_rows, const __half* staged, long long staged_rows,          \
       int staged_stride, int staged_sequences, int staged_flat)

#define CODEC_MMA_ENTRY(name, FAULT, SPLIT, STAGED)                                                                 \
  extern "C" __global__ void __launch_bounds__(MMA_THREADS, 2) CODEC_MMA_SIGNATURE(name) {                            \
    KERNEL_PROLOGUE();                                                                                              \
    mma_conv<FAULT, SPLIT, STAGED>(out, out_stride, x, x_stride, weight, bias, alpha, residual, residual_stride,    \
                                   scale, history, sequences, row_scale, inputs, outputs, kernel, dilation,         \
                                   activation, partials, partial_rows, staged, staged_rows, staged_stride,          \
                                   staged_sequences, staged_flat);                                                  \
  }

#define CODEC_MMA_COMBINE_ENTRY(name, FAULT)                                                                        \
  extern "C" __global__ void __launch_bounds__(CODEC_THREADS)                                                       \
      name(float* out, long long out_stride, const float* partials, long long partial_rows, int groups,             \
           const float* bias, const float* residual, long long residual_stride, const float* scale,                 \
           const int* sequences, int row_scale, int outputs, int activation) {                                      \
    KERNEL_PROLOGUE();                                                                                              \
    mma_combine<FAULT>(out, out_stride, partials, partial_rows, groups, bias, residual, residual_stride, scale,     \
                       sequences, row_scale, outputs, activation);                                                  \
  }
