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
      float sum = w[0] * history[0];
#pragma unroll
      for (int j = 1; j < CONV_HISTORY; j++) sum = fmaf(w[j], history[j], sum);
      sum = fmaf(w[CONV_HISTORY], current, sum);
      out[(long long)(sequence.first_row + t) * out_row_stride + channel] = to_bf16(silu(sum));
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
  const long long key_offset = (long long)key_heads * HEAD_DIM;
  const long long value_offset = 2 * key_offset + (long long)head * HEAD_DIM + blockIdx.x * COLUMNS_PER_BLOCK;
  const int rows = FAULT == FAULT_RECURRENCE_SKIPS_LAST_ROW ? sequence.row_count - 1 : sequence.row_count;
  for (int start = 0; start < rows; start += STAGED_ROWS) {
    const int staged = min(STAGED_ROWS, rows - start);
    // Stage: warp w normalises q and k of rows w, w+4, ...; every thread copies values and gates.
    for (int r = warp; r < staged; r += RECURRENCE_THREADS / 32) {
      const bf16* row = qkv + (long long)(sequence.first_row + start + r) * qkv_row_stride + key_head * HEAD_DIM;
      float q[4], k[4];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        q[j] = to_float(row[lane + 32 * j]);
        k[j] = to_float(row[key_offset + lane + 32 * j]);
      }
      const float query_factor = query_scale / sqrtf(head_squares(q) + 1e-6f);
      const float key_factor = 1.0f / sqrtf(head_squares(k) + 1e-6f);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        stage.query[r][lane + 32 * j] = q[j] * query_factor;
        stage.key[r][lane + 32 * j] = k[j] * key_factor;
      }
    }
    for (int index = threadIdx.x; index < staged * COLUMNS_PER_BLOCK; index += RECURRENCE_THREADS) {
      const int r = index / COLUMNS_PER_BLOCK;
      const int c = index - r * COLUMNS_PER_BLOCK;
      stage.value[r][c] = to_float(qkv[(long long)(sequence.first_row + start + r) * qkv_row_stride + value_offset + c]);
    }
    for (int r = threadIdx.x; r < staged; r += RECURRENCE_THREADS) {
      const long long gate = (long long)(sequence.first_row + start + r) * value_heads + head;
      stage.decay[r] = expf(g[gate]);
      stage.beta[r] = beta[gate];
    }
    __syncthreads();
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
