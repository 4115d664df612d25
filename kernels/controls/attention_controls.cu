// Deliberately wrong attention kernels for the kernel contract's controls, with the real kernels' signatures
// (kernels/cuda/attention.cu). Never launched by the backend.
//   control_attention_prepare_key_row_off_by_one  writes K one row past its position         (accuracy gate)
//   control_attention_short_by_one_d256           attends keys 0..position − 1                (accuracy gate)
//   control_attention_tiles_from_call_d256        cuts the first tile of each split at the call's first position
//                                                  instead of a multiple of 64: the tile walk then depends on the
//                                                  chunking and on the row's place in the call (equivalence gate)
//   control_attention_group_first_row_splits_d256  a block's rows of one slot walk only the splits their first row
//                                                  reaches: a row past a split point that its group's first row is
//                                                  short of loses its last split (the schedule gates, at calls whose
//                                                  row groups straddle a split point)
//   control_attention_grouped_scores_levels_reversed_d256  the grouped walk sums each score's lane partials with the
//                                                  levels in the other order (offsets 1, 2, 4, 8, 16): accurate, but
//                                                  not the per-row walk's bits (the schedule gates: a call of more
//                                                  than 64 rows against the same rows in smaller calls)
//   control_attention_few_rows_sum_by_halves_d256  the few-rows walk's warps sum a tile's probabilities a half (32
//                                                  keys) at a time and add the two: accurate, but not the other
//                                                  walks' bits (the schedule gates: calls of 1 and 2 rows against
//                                                  calls of more)
//   control_attention_shared_per_row_idle_d256     the few-rows kernel's shared form whose per-row blocks never walk:
//                                                  a call past the few-rows walk's bound is walked by neither, its
//                                                  rows' partials left unwritten (accuracy gate, on the calls over a
//                                                  slab past 16384 rows)
// Each control runs the walk the launcher's call shape is for: the grouped walk for fold = 1, the few-rows walk for
// calls of at most ATTENTION_FEW_ROWS rows (a shared one's short calls, fold = 2), the per-row walk otherwise.
#include "attention_few_rows.cuh"

extern "C" __global__ void control_attention_prepare_key_row_off_by_one(
    bf16* q_out, bf16* keys, bf16* values, const bf16* q_proj, const bf16* k_proj, const bf16* v_proj,
    const bf16* q_norm, const bf16* k_norm, const int* row_table, int rows, int query_heads, int kv_heads,
    int head_dim, int rotary_dims, float theta, int interleaved, int gated, int slots, int capacity, float eps) {
  KERNEL_PROLOGUE();
  attention_prepare<PREPARE_KEY_ROW_OFF_BY_ONE>(q_out, keys, values, q_proj, k_proj, v_proj, q_norm, k_norm,
                                                row_table, rows, query_heads, kv_heads, head_dim, rotary_dims, theta,
                                                interleaved, gated, slots, capacity, eps);
}

// The few-rows walk as a call of its own, so that a control holding all three allocates registers for each apart.
template <int VARIANT>
__device__ __noinline__ void control_few_rows(float* workspace, const bf16* q, const bf16* keys, const bf16* values,
                                              const int* row_table, int rows, int query_heads, int kv_heads,
                                              int slots, int capacity, int max_splits, float scale, bool shared) {
  attention_few_rows_call<256, VARIANT>(workspace, q, keys, values, row_table, rows, query_heads, kv_heads, slots,
                                        capacity, max_splits, scale, shared);
}

// The controls stand in for any attention kernel (the same signature).
#define CONTROL_ENTRY(NAME, VARIANT)                                                                             \
  extern "C" __global__ void __launch_bounds__(256)                                                              \
      NAME(bf16* out, float* workspace, const bf16* q, const bf16* gate, long long gate_row_stride,              \
           long long gate_head_stride, const bf16* keys, const bf16* values, const int* row_table, int rows,      \
           int query_heads, int kv_heads, int slots, int capacity, int max_splits, float scale, int fold) {       \
    KERNEL_PROLOGUE();                                                                                            \
    if (fold != 1 && rows <= ATTENTION_FEW_ROWS) {                                                                \
      control_few_rows<VARIANT>(workspace, q, keys, values, row_table, rows, query_heads, kv_heads, slots,        \
                                capacity, max_splits, scale, fold == ATTENTION_FOLD_SHARED);                      \
    } else {                                                                                                      \
      attention_rows_either<256, VARIANT>(out, workspace, q, gate, gate_row_stride, gate_head_stride, keys,       \
                                          values, row_table, rows, query_heads, kv_heads, slots, capacity,        \
                                          max_splits, scale, fold);                                               \
    }                                                                                                             \
  }

CONTROL_ENTRY(control_attention_short_by_one_d256, ATTENTION_SHORT_BY_ONE)
CONTROL_ENTRY(control_attention_tiles_from_call_d256, ATTENTION_TILES_FROM_CALL)
CONTROL_ENTRY(control_attention_group_first_row_splits_d256, ATTENTION_GROUP_FIRST_ROW_SPLITS)
CONTROL_ENTRY(control_attention_grouped_scores_levels_reversed_d256, ATTENTION_GROUPED_SCORES_LEVELS_REVERSED)
CONTROL_ENTRY(control_attention_few_rows_sum_by_halves_d256, ATTENTION_FEW_ROWS_SUM_BY_HALVES)
CONTROL_ENTRY(control_attention_shared_per_row_idle_d256, ATTENTION_SHARED_PER_ROW_IDLE)
