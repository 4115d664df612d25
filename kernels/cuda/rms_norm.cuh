// The RMSNorm family's row functions (rms_norm.cu's kernels, and the tower input that norms two rows into one):
// fp32 arithmetic from bf16 inputs, the sum of squares in a fixed order, one rounding to bf16 at the output.
#pragma once
#include "code_gather.cuh"

__device__ __forceinline__ float element_at(const bf16* row, int column) { return to_float(row[column]); }
__device__ __forceinline__ float element_at(const float* row, int column) { return row[column]; }
// A gathered code row read as the stored gather would hold it (a zero row where masked, NaN past the table).
__device__ __forceinline__ float element_at(const CodeRow& row, int column) {
  return to_float(code_element(row, column));
}

// Columns a thread holds at once: the launchers give a row ceil(cols / 4) threads, so one pass covers it. Each thread
// still visits columns t, t + B, t + 2B, ... in that order (the sum of squares' order); loading a pass's columns
// before storing any keeps the loads in flight together (out may alias x, so stores between them would serialise).
#define NORM_COLUMNS_PER_THREAD 4

// A thread's columns of one pass, base + t + i·B (B = stride), as floats (0 from `cols` on), every load issued before
// any use.
template <typename Row>
__device__ __forceinline__ void load_pass(float (&values)[NORM_COLUMNS_PER_THREAD], const Row& row, int base, int cols,
                                          int stride) {
#pragma unroll
  for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
    const int column = base + threadIdx.x + i * stride;
    values[i] = column < cols ? element_at(row, column) : 0.0f;
  }
}

// A thread's norm weights for a row that one pass covers (as the launchers size it), loaded before the kernel waits
// for the previous grid: no step writes weights, so these loads overlap that grid's tail instead of following the
// row's sum. `loaded` is false for a row of more passes, whose weights are loaded pass by pass as before.
struct PassWeights {
  float values[NORM_COLUMNS_PER_THREAD];
  bool loaded;
};

template <typename Weight>
__device__ __forceinline__ PassWeights early_pass_weights(const Weight* weight, int cols, int held_cols, int stride) {
  PassWeights early = {};
  early.loaded = cols <= NORM_COLUMNS_PER_THREAD * stride;
  if (early.loaded) load_pass(early.values, weight, 0, held_cols, stride);
  return early;
}

// A pass's weights: the early ones when they were loaded, else from memory.
template <typename Weight>
__device__ __forceinline__ void pass_weights(float (&weights)[NORM_COLUMNS_PER_THREAD], const PassWeights& early,
                                             const Weight* weight, int base, int held_cols, int stride) {
  if (early.loaded) {
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) weights[i] = early.values[i];
  } else {
    load_pass(weights, weight, base, held_cols, stride);
  }
}

// With PART_OF_BLOCK, the block's first `threads` threads (a multiple of 32) norm the row as a launch of that many
// threads would: thread t visits columns t, t + threads, ... The others hold no columns and add +0 from whole warps to
// the block sum, as the lanes past the smaller block's warps do, so the row has that launch's bits. Without it,
// `threads` is the block's own count.
template <bool GATED, bool PART_OF_BLOCK = false, typename Row, typename Weight>
__device__ __forceinline__ void rms_norm_row(bf16* out, const Row& x, const bf16* gate, const Weight* weight, int cols,
                                             float eps, bool zero_centred, int threads, const PassWeights& early) {
  __shared__ float scratch[32];
  const int stride = threads;
  const int pass = NORM_COLUMNS_PER_THREAD * stride;
  const int held = !PART_OF_BLOCK || (int)threadIdx.x < threads ? cols : 0;
  float squares = 0.0f;
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    load_pass(values, x, base, held, stride);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      if (base + threadIdx.x + i * stride < held) squares += values[i] * values[i];
    }
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float weights[NORM_COLUMNS_PER_THREAD];
    float gates[NORM_COLUMNS_PER_THREAD] = {};
    load_pass(values, x, base, held, stride);
    pass_weights(weights, early, weight, base, held, stride);
    if (GATED) load_pass(gates, gate, base, held, stride);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column >= held) continue;
      const float w = weights[i];
      float value = values[i] * scale * (zero_centred ? 1.0f + w : w);
      if (GATED) value *= silu(gates[i]);
      out[column] = to_bf16(value);
    }
  }
}

// The residual add and the norm of its rounded sum: each thread uses only the sums it computed itself, kept in
// registers between the two passes when the row fits one pass (as the launchers size it), else read back.
template <typename Weight>
__device__ __forceinline__ void add_rms_norm_row(bf16* out, bf16* x, const bf16* source, const Weight* weight,
                                                 int cols, float eps, const PassWeights& early) {
  __shared__ float scratch[32];
  const int stride = blockDim.x;
  const int pass = NORM_COLUMNS_PER_THREAD * stride;
  const bool one_pass = cols <= pass;
  float kept[NORM_COLUMNS_PER_THREAD] = {};
  float squares = 0.0f;
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float sources[NORM_COLUMNS_PER_THREAD];
    load_pass(values, x, base, cols, stride);
    load_pass(sources, source, base, cols, stride);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column >= cols) continue;
      const bf16 sum = to_bf16(values[i] + sources[i]);
      x[column] = sum;
      const float value = to_float(sum);
      kept[i] = value;
      squares += value * value;
    }
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float weights[NORM_COLUMNS_PER_THREAD];
    if (one_pass) {
#pragma unroll
      for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) values[i] = kept[i];
    } else {
      load_pass(values, x, base, cols, stride);
    }
    pass_weights(weights, early, weight, base, cols, stride);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column < cols) out[column] = to_bf16(values[i] * scale * (1.0f + weights[i]));
    }
  }
}

// The code half's norm weight: enorm, or hnorm in the contract's control (CODE_NORMED_WITH_INPUT_WEIGHT) only.
template <typename Weight, bool CODE_NORMED_WITH_INPUT_WEIGHT>
__device__ __forceinline__ const Weight* tower_code_norm(const Weight* code_weight, const Weight* input_weight) {
  return CODE_NORMED_WITH_INPUT_WEIGHT ? input_weight : code_weight;
}

// The tower layer's input row [enorm(code row) | hnorm(input row)], both zero-centred: each half normed by the thread
// count its own rms_norm_bf16 launch would have, so the row has the bits of gather_codes_bf16, rms_norm_bf16 on each
// half and concat_columns_bf16. The kernel loads both halves' weights before it waits, each in its half's mapping.
template <typename Weight, bool CODE_NORMED_WITH_INPUT_WEIGHT>
__device__ __forceinline__ void tower_input_row(bf16* out, const CodeRow& code, const Weight* code_weight,
                                                const bf16* input, const Weight* input_weight, int code_cols,
                                                int input_cols, int code_threads, int input_threads, float eps,
                                                const PassWeights& code_early, const PassWeights& input_early) {
  const Weight* code_norm = tower_code_norm<Weight, CODE_NORMED_WITH_INPUT_WEIGHT>(code_weight, input_weight);
  rms_norm_row<false, true>(out, code, nullptr, code_norm, code_cols, eps, true, code_threads, code_early);
  rms_norm_row<false, true>(out + code_cols, input, nullptr, input_weight, input_cols, eps, true, input_threads,
                            input_early);
}

// out [rows, code_cols + input_cols]; code_table [code_rows, code_cols]; records int32 [rows, width]; input
// [rows, input_cols]; out overlaps no input. One block per row of max(code_threads, input_threads) threads.
#define TOWER_INPUT_KERNEL(ENTRY, WEIGHT, CODE_NORMED_WITH_INPUT_WEIGHT)                                            \
  extern "C" __global__ void ENTRY(bf16* __restrict__ out, const bf16* __restrict__ code_table,                     \
                                   const int* __restrict__ records, int width, int codebook, int code_first_row,    \
                                   int code_rows, const WEIGHT* __restrict__ code_weight,                           \
                                   const bf16* __restrict__ input, const WEIGHT* __restrict__ input_weight,         \
                                   int rows, int code_cols, int input_cols, int code_threads, int input_threads,    \
                                   float eps) {                                                                     \
    allow_dependent_launch();                                                                                       \
    const int code_held = (int)threadIdx.x < code_threads ? code_cols : 0;                                          \
    const int input_held = (int)threadIdx.x < input_threads ? input_cols : 0;                                       \
    const PassWeights code_early = early_pass_weights(                                                              \
        tower_code_norm<WEIGHT, CODE_NORMED_WITH_INPUT_WEIGHT>(code_weight, input_weight), code_cols, code_held,    \
        code_threads);                                                                                              \
    const PassWeights input_early = early_pass_weights(input_weight, input_cols, input_held, input_threads);         \
    wait_for_previous_grids();                                                                                      \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    const CodeRow code = code_row(code_table, records, row, width, codebook, code_first_row, code_cols, code_rows);  \
    tower_input_row<WEIGHT, CODE_NORMED_WITH_INPUT_WEIGHT>(out + row * (code_cols + input_cols), code, code_weight, \
                                                           input + row * input_cols, input_weight, code_cols,       \
                                                           input_cols, code_threads, input_threads, eps,            \
                                                           code_early, input_early);                                \
  }
