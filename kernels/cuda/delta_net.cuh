// Device code of the Gated DeltaNet kernels (delta_net.cu says what they compute). Each stage is a template over a
// planted fault, so that the contract's controls (kernels/controls/delta_net_controls.cu) differ from the real
// kernels in exactly one place; the real kernels instantiate FAULT_NONE.
#pragma once
#include "common.cuh"

enum DeltaNetFault { FAULT_NONE = 0, FAULT_CONV_HISTORY_OFF_BY_ONE = 1, FAULT_RECURRENCE_SKIPS_LAST_ROW = 2 };

// Sequence table entries (LAYOUT.md): (slot, firstRow, rowCount, startPosition).
struct Sequence {
  int slot;
  int first_row;
  int row_count;
};

__device__ __forceinline__ Sequence read_sequence(const int* sequences, int index) {
  const int* entry = sequences + 4 * (long long)index;
  return {entry[0], entry[1], entry[2]};
}

constexpr int CONV_WIDTH = 4;
constexpr int CONV_HISTORY = CONV_WIDTH - 1;
constexpr int CONV_ROWS_PER_TILE = 8;

// One output of the conv + SiLU: Σ_j w[j]·in[t−3+j] in j order (the first product rounded, each later one fused into
// the sum), SiLU in fp32, one rounding to bf16. conv_silu and the DeltaNet combine (delta_net_combine.cuh) share it.
__device__ __forceinline__ bf16 conv_silu_value(const float (&w)[CONV_WIDTH], const float (&history)[CONV_HISTORY],
                                                float current) {
  float sum = w[0] * history[0];
#pragma unroll
  for (int j = 1; j < CONV_HISTORY; j++) sum = fmaf(w[j], history[j], sum);
  sum = fmaf(w[CONV_HISTORY], current, sum);
  return to_bf16(silu(sum));
}

// One thread per channel of one row tile of one sequence. Every output is Σ_j w[c][j]·in[t−3+j] in j order, so a row's
// result does not depend on the tile, the call or the chunk it is in.
template <int FAULT>
__device__ __forceinline__ void conv_silu(bf16* out, long long out_row_stride, const bf16* x, long long x_row_stride,
                                          const bf16* weight, bf16* conv_state, const int* sequences, int channels) {
  const int channel = blockIdx.x * blockDim.x + threadIdx.x;
  if (channel >= channels) return;
  const Sequence sequence = read_sequence(sequences, blockIdx.z);
  bf16* state = conv_state + (long long)sequence.slot * CONV_HISTORY * channels + channel;
  float w[CONV_WIDTH];
#pragma unroll
  for (int j = 0; j < CONV_WIDTH; j++) w[j] = to_float(weight[(long long)channel * CONV_WIDTH + j]);
  // Input row s of the sequence: x for s ≥ 0, the carried state (oldest first) for s in [−3, −1].
  const auto input = [&](int s) -> float {
    if (FAULT == FAULT_CONV_HISTORY_OFF_BY_ONE) s -= 1;
    if (s >= 0) return to_float(x[(long long)(sequence.first_row + s) * x_row_stride + channel]);
    return s >= -CONV_HISTORY ? to_float(state[(long long)(CONV_HISTORY + s) * channels]) : 0.0f;
  };
  const int tiles = (sequence.row_count + CONV_ROWS_PER_TILE - 1) / CONV_ROWS_PER_TILE;
  for (int tile = blockIdx.y; tile < tiles; tile += gridDim.y) {
    const int start = tile * CONV_ROWS_PER_TILE;
    const int end = min(start + CONV_ROWS_PER_TILE, sequence.row_count);
    float history[CONV_HISTORY];
#pragma unroll
    for (int j = 0; j < CONV_HISTORY; j++) history[j] = input(start - CONV_HISTORY + j);
    for (int t = start; t < end; t++) {
      const float current = input(t);
      out[(long long)(sequence.first_row + t) * out_row_stride + channel] = conv_silu_value(w, history, current);
#pragma unroll
      for (int j = 0; j + 1 < CONV_HISTORY; j++) history[j] = history[j + 1];
      history[CONV_HISTORY - 1] = current;
    }
  }
  // Only this thread reads this channel's carried state (tile 0 is the only tile that reaches back into it), so it
  // can replace it without a barrier: read the new history first, then write it.
  if (blockIdx.y != 0) return;
  float next[CONV_HISTORY];
#pragma unroll
  for (int j = 0; j < CONV_HISTORY; j++) next[j] = input(sequence.row_count - CONV_HISTORY + j);
#pragma unroll
  for (int j = 0; j < CONV_HISTORY; j++) state[(long long)j * channels] = to_bf16(next[j]);
}

// a_log and dt_bias as the checkpoint stores them (fp32 or bf16, widened exactly).
__device__ __forceinline__ float parameter(const float* values, int index) { return values[index]; }
__device__ __forceinline__ float parameter(const bf16* values, int index) { return to_float(values[index]); }

// One (row, value head)'s gates from its bf16 b and a: g = −exp(A_log)·softplus(a + dt_bias) (torch's softplus:
// linear above 20) in fp32; beta = sigmoid(b) rounded to bf16 (as torch forms it and the cpu bf16 path rounds it),
// kept in fp32. delta_net_gates and the DeltaNet combine share it.
template <typename Parameter>
__device__ __forceinline__ void gate_values(float b, float a, const Parameter* a_log, const Parameter* dt_bias,
                                            int head, float& g, float& beta) {
  const float shifted = a + parameter(dt_bias, head);
  const float softplus = shifted > 20.0f ? shifted : log1pf(expf(shifted));
  g = -expf(parameter(a_log, head)) * softplus;
  beta = to_float(to_bf16(1.0f / (1.0f + expf(-b))));
}

constexpr int HEAD_DIM = 128;
constexpr int COLUMNS_PER_BLOCK = 32;
constexpr int RECURRENCE_THREADS = 128;
constexpr int KEY_GROUPS = 4;
constexpr int KEYS_PER_THREAD = HEAD_DIM / KEY_GROUPS;
constexpr int STAGED_ROWS = 32;

// Shared staging of up to STAGED_ROWS rows of one sequence for one (value head, column group).
struct RecurrenceStage {
  float query[STAGED_ROWS][HEAD_DIM];
  float key[STAGED_ROWS][HEAD_DIM];
  float value[STAGED_ROWS][COLUMNS_PER_BLOCK];
  float decay[STAGED_ROWS];
  float beta[STAGED_ROWS];
};

static_assert(STAGED_ROWS * COLUMNS_PER_BLOCK / 2 == 4 * RECURRENCE_THREADS, "four value pairs per thread");
static_assert(2 * HEAD_DIM == 2 * RECURRENCE_THREADS, "one q or k pair per thread and row");

// Sum of squares of one 128-vector, lane i holding elements i, i+32, i+64, i+96: added in that order, then the warp
// butterfly; every lane gets the same bits.
__device__ __forceinline__ float head_squares(const float (&values)[4]) {
  float sum = values[0] * values[0];
#pragma unroll
  for (int j = 1; j < 4; j++) sum = fmaf(values[j], values[j], sum);
  return warp_sum(sum);
}

// Adds the partial dot products of the KEY_GROUPS lanes that share a column (lanes 4c .. 4c+3): xor 1 then xor 2,
// commutative at each step, so all four lanes hold the same sum.
__device__ __forceinline__ float key_group_sum(float value) {
  value += __shfl_xor_sync(0xffffffffu, value, 1);
  value += __shfl_xor_sync(0xffffffffu, value, 2);
  return value;
}

template <int FAULT>
__device__ __forceinline__ void recurrence(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g,
                                           const float* beta, float* state_slab, const int* sequences, int key_heads,
                                           int value_heads) {
  __shared__ RecurrenceStage stage;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int key_group = lane & (KEY_GROUPS - 1);
  const int local_column = warp * (32 / KEY_GROUPS) + (lane >> 2);
  const int column = blockIdx.x * COLUMNS_PER_BLOCK + local_column;
  const int head = blockIdx.y;
  const int key_head = head / (value_heads / key_heads);
  const Sequence sequence = read_sequence(sequences, blockIdx.z);
  float* state = state_slab + ((long long)sequence.slot * value_heads + head) * HEAD_DIM * HEAD_DIM + column;
  // This thread's share of the state: S[4i + key_group][column] for i < 32.
  float s[KEYS_PER_THREAD];
#pragma unroll
  for (int i = 0; i < KEYS_PER_THREAD; i++) s[i] = state[(long long)(KEY_GROUPS * i + key_group) * HEAD_DIM];
  const float query_scale = 0.08838834764831845f;  // 1/sqrt(HEAD_DIM) rounded to fp32
  const int rows = FAULT == FAULT_RECURRENCE_SKIPS_LAST_ROW ? sequence.row_count - 1 : sequence.row_count;
  // The next staged rows, loaded into registers while the current ones are computed: thread x holds the bf16 pair
  // x of each row's q (x < 64) or k (x ≥ 64), value pair x % 16 of rows x/16 + 8j, and row x's gates.
  const bool holds_query = threadIdx.x < 64;
  const int pair = holds_query ? threadIdx.x : threadIdx.x - 64;
  const long long qk_column = (holds_query ? 0 : (long long)key_heads * HEAD_DIM) + key_head * HEAD_DIM + 2 * pair;
  const int value_pair = threadIdx.x & 15;
  const long long value_column =
      2LL * key_heads * HEAD_DIM + (long long)head * HEAD_DIM + blockIdx.x * COLUMNS_PER_BLOCK + 2 * value_pair;
  __nv_bfloat162 pending_qk[STAGED_ROWS];
  __nv_bfloat162 pending_value[STAGED_ROWS * COLUMNS_PER_BLOCK / 2 / RECURRENCE_THREADS];
  float pending_g = 0.0f, pending_beta = 0.0f;
  const auto prefetch = [&](int start) {
    const int staged = min(STAGED_ROWS, rows - start);
    const bf16* base = qkv + (long long)(sequence.first_row + start) * qkv_row_stride;
#pragma unroll
    for (int r = 0; r < STAGED_ROWS; r++) {
      if (r < staged) {
        pending_qk[r] = *reinterpret_cast<const __nv_bfloat162*>(base + r * qkv_row_stride + qk_column);
      }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int r = (threadIdx.x >> 4) + 8 * j;
      if (r < staged) {
        pending_value[j] = *reinterpret_cast<const __nv_bfloat162*>(base + r * qkv_row_stride + value_column);
      }
    }
    if ((int)threadIdx.x < staged) {
      const long long gate = (long long)(sequence.first_row + start + threadIdx.x) * value_heads + head;
      pending_g = g[gate];
      pending_beta = beta[gate];
    }
  };
  if (rows > 0) prefetch(0);
  for (int start = 0; start < rows; start += STAGED_ROWS) {
    const int staged = min(STAGED_ROWS, rows - start);
    float(*qk_rows)[HEAD_DIM] = holds_query ? stage.query : stage.key;
#pragma unroll
    for (int r = 0; r < STAGED_ROWS; r++) {
      if (r < staged) {
        const float2 values = __bfloat1622float2(pending_qk[r]);
        qk_rows[r][2 * pair] = values.x;
        qk_rows[r][2 * pair + 1] = values.y;
      }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int r = (threadIdx.x >> 4) + 8 * j;
      if (r < staged) {
        const float2 values = __bfloat1622float2(pending_value[j]);
        stage.value[r][2 * value_pair] = values.x;
        stage.value[r][2 * value_pair + 1] = values.y;
      }
    }
    if ((int)threadIdx.x < staged) {
      stage.decay[threadIdx.x] = expf(pending_g);
      stage.beta[threadIdx.x] = pending_beta;
    }
    __syncthreads();
    // Warp w L2-normalises q and k of rows w, w+4, ... in place.
    for (int r = warp; r < staged; r += RECURRENCE_THREADS / 32) {
      float q[4], k[4];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        q[j] = stage.query[r][lane + 32 * j];
        k[j] = stage.key[r][lane + 32 * j];
      }
      const float query_factor = query_scale / sqrtf(head_squares(q) + 1e-6f);
      const float key_factor = 1.0f / sqrtf(head_squares(k) + 1e-6f);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        stage.query[r][lane + 32 * j] = q[j] * query_factor;
        stage.key[r][lane + 32 * j] = k[j] * key_factor;
      }
    }
    __syncthreads();
    if (start + STAGED_ROWS < rows) prefetch(start + STAGED_ROWS);
    for (int r = 0; r < staged; r++) {
      const float decay = stage.decay[r];
      // Sᵀk of the decayed state, this thread's 32 keys in order in two interleaved chains, then across the group.
      float even = 0.0f, odd = 0.0f;
#pragma unroll
      for (int i = 0; i < KEYS_PER_THREAD; i += 2) {
        s[i] *= decay;
        s[i + 1] *= decay;
        even = fmaf(s[i], stage.key[r][KEY_GROUPS * i + key_group], even);
        odd = fmaf(s[i + 1], stage.key[r][KEY_GROUPS * (i + 1) + key_group], odd);
      }
      const float memory = key_group_sum(even + odd);
      const float delta = stage.beta[r] * (stage.value[r][local_column] - memory);
      even = 0.0f;
      odd = 0.0f;
#pragma unroll
      for (int i = 0; i < KEYS_PER_THREAD; i += 2) {
        s[i] = fmaf(stage.key[r][KEY_GROUPS * i + key_group], delta, s[i]);
        s[i + 1] = fmaf(stage.key[r][KEY_GROUPS * (i + 1) + key_group], delta, s[i + 1]);
        even = fmaf(s[i], stage.query[r][KEY_GROUPS * i + key_group], even);
        odd = fmaf(s[i + 1], stage.query[r][KEY_GROUPS * (i + 1) + key_group], odd);
      }
      const float output = key_group_sum(even + odd);
      if (key_group == 0) {
        const long long row = sequence.first_row + start + r;
        out[(row * value_heads + head) * HEAD_DIM + column] = to_bf16(output);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < KEYS_PER_THREAD; i++) state[(long long)(KEY_GROUPS * i + key_group) * HEAD_DIM] = s[i];
}
