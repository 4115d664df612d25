// Softmax attention over lane-slot KV slabs: the backbone's gated attention and the tower's plain attention.
//   row_table: [T, 2] int32 = (slot, position); keys, values: [slots, capacity, Hkv, D] bf16, the row index is the
//   absolute position in the lane; K is stored normed and rotated, V as projected
// attention_prepare_bf16, one block per (row, head) over the Hq query heads then the Hkv key heads:
//   q_proj: [T, Hq, 2D] (per head [query D | gate D]) when gated, else [T, Hq, D]; k_proj, v_proj: [T, Hkv, D]
//   q = rope(norm_q(query)), k = rope(norm_k(k)): zero-centred RMSNorm over D (x·rsqrt(mean(x²)+eps)·(1+w), fp32),
//   then partial RoPE of the first rotary_dims at the row's position (NeoX or interleaved pairs; inv_freq and the
//   angle in fp32 as torch forms them, cos/sin and the rotation in fp64, as rope_bf16)
//   q_out: [T, Hq, D]; k and v are written to keys/values[slot, position]
//   rounding points (the cpu bf16 path rounds at both): the normed q/k to bf16, then the rotated q/k to bf16
// attention_bf16_d{64,128,256}, block 32·(Hq/Hkv) (at most 512 threads), warp w = query head kv·group + w:
//   out[t, h] = softmax(q·kᵀ · scale) · V over keys 0..position of the row's slot (causal), GQA by kv = h / group
//   fixed order per (row, head): keys cut into splits at multiples of 256 absolute positions, each split walked in
//   64-key tiles from its start with an online softmax in fp32 (max, sum, accumulator), the splits' states folded in
//   split order from the empty state; a row's bits depend only on its slot's keys and its position: not on T, the
//   other rows, the chunking or which rows share its block
//   scores: each lane's partial of q·k is an fma chain over its D/32 dims; the 32 partials of a key are summed by
//   warp_sum's pairing tree (offsets 16, 8, 4, 2, 1), taken transposed over 32 keys at once: at offset w a lane keeps
//   the keys whose bit w is its own and trades the others with lane ^ w (31 shuffles for 32 keys, not 5 a key), so
//   lane j ends with key j's sum in warp_sum's bits; keys past a row's count are set to −inf after the sum
//   fold = 1 (calls of more than 64 rows): grid (ceil(T / 4), Hkv, 1); a block takes 4 consecutive rows, and those of
//   one slot walk together: each K and V tile is staged once for all of them (cp.async, the next tile's copy in
//   flight while this one is used), every row using only its own keys of it; rows of other slots, or at positions far
//   apart, are simply a group of their own or use less of each tile; the splits fold on chip (states in shared memory)
//   fold = 0 (calls of at most 64 rows): grid (T, Hkv · S, Z) with Z ≤ ceil(capacity / 256) fixed by T and the
//   capacity, and a KV head's query heads dealt to S blocks of 32·group / S threads (S a divisor of the group, chosen
//   by the launcher: more blocks for a call of few rows; each warp's walk is the same);
//   block z walks splits z, z + Z, ... of its row (the same staged walk, one row) and writes each split's state apart;
//   attention_combine folds them in split order: the same bits as fold = 1; the per-row kernel also runs fold = 1,
//   grid (T, Hkv, 1), one row a block, where a launcher asks for it (the bench's comparison)
//   few rows (at most 4, D 128 or 256): attention_few_rows_bf16_d* walks a call of few splits (attention.cuh
//   ATTENTION_FEW_ROWS_MOST_BLOCKS) four warps a head, fold = 0's grid and partials; where the slab holds longer
//   calls, attention_few_rows_shared_bf16_d* (fold = 2), whose grid starts with Hkv blocks of the per-row walk,
//   which walk those, each block reading the call's rows to know which walk is its own
//   dynamic shared memory: the K and V tiles (2 · 64 · D bf16), then for fold = 1 the fold states of the block's rows
//   (fp32 [rows][D/32 + 2][threads])
//   probabilities stay fp32 (the cpu bf16 path rounds normalised probabilities to bf16, which a streaming softmax
//   cannot reproduce); rounding points: the attended row to bf16, then (gated) the row × sigmoid(gate) to bf16,
//   as the cpu bf16 path rounds; gate[t, h, d] at gate + t·gate_row_stride + h·gate_head_stride + d (null: none)
//   workspace (fold = 0): fp32 [T, Hq, max_splits, D] accumulators then [T, Hq, max_splits, 2] (max, sum)
// A row whose slot or position lies outside the slabs writes NaN outputs and no slab rows.
#include "attention_few_rows.cuh"

extern "C" __global__ void attention_prepare_bf16(bf16* q_out, bf16* keys, bf16* values, const bf16* q_proj,
                                                  const bf16* k_proj, const bf16* v_proj, const bf16* q_norm,
                                                  const bf16* k_norm, const int* row_table, int rows,
                                                  int query_heads, int kv_heads, int head_dim, int rotary_dims,
                                                  float theta, int interleaved, int gated, int slots, int capacity,
                                                  float eps) {
  KERNEL_PROLOGUE();
  attention_prepare<PREPARE_EXACT>(q_out, keys, values, q_proj, k_proj, v_proj, q_norm, k_norm, row_table, rows,
                                   query_heads, kv_heads, head_dim, rotary_dims, theta, interleaved, gated, slots,
                                   capacity, eps);
}

// The two attention kernels of a head dim share one signature (a control stands in for either): the per-row walk
// (calls of at most 64 rows, fold = 0) and the grouped walk of ATTENTION_ROWS_PER_BLOCK rows (larger calls, fold = 1).
#define ATTENTION_SIGNATURE                                                                                        \
  (bf16 * out, float* workspace, const bf16* q, const bf16* gate, long long gate_row_stride,                        \
   long long gate_head_stride, const bf16* keys, const bf16* values, const int* row_table, int rows,                \
   int query_heads, int kv_heads, int slots, int capacity, int max_splits, float scale, int fold)
#define ATTENTION_ARGUMENTS                                                                                        \
  out, workspace, q, gate, gate_row_stride, gate_head_stride, keys, values, row_table, rows, query_heads, kv_heads, \
      slots, capacity, max_splits, scale, fold

#define ATTENTION_ENTRIES(D)                                                                                      \
  extern "C" __global__ void __launch_bounds__(256) attention_bf16_d##D ATTENTION_SIGNATURE {                    \
    allow_dependent_launch();                                                                                     \
    if (attention_block_idle<ATTENTION_EXACT>(row_table, rows, slots, capacity)) return;                          \
    wait_for_previous_grids();                                                                                    \
    attention_rows<D, 1, ATTENTION_EXACT>(ATTENTION_ARGUMENTS);                                                   \
  }                                                                                                               \
  extern "C" __global__ void __launch_bounds__(256, 1) attention_grouped_bf16_d##D ATTENTION_SIGNATURE {         \
    KERNEL_PROLOGUE();                                                                                            \
    attention_rows<D, ATTENTION_ROWS_PER_BLOCK, ATTENTION_EXACT>(ATTENTION_ARGUMENTS);                            \
  }                                                                                                               \
  extern "C" __global__ void attention_combine_bf16_d##D(                                                         \
      bf16* out, const float* workspace, const bf16* gate, long long gate_row_stride, long long gate_head_stride,  \
      const int* row_table, int rows, int query_heads, int kv_heads, int slots, int capacity, int max_splits) {   \
    KERNEL_PROLOGUE();                                                                                            \
    attention_combine<D, ATTENTION_EXACT>(out, workspace, gate, gate_row_stride, gate_head_stride, row_table,     \
                                          rows, query_heads, kv_heads, slots, capacity, max_splits);              \
  }

ATTENTION_ENTRIES(64)
ATTENTION_ENTRIES(128)
ATTENTION_ENTRIES(256)

// The per-row kernel's walk for calls of at most ATTENTION_FEW_ROWS rows, four warps a head (fold = 0; out and gate
// unused: attention_combine writes the output); its blocks hold at most 2 heads (256 threads). The shared form (fold
// = 2) is the launch of a slab that holds calls past the few-rows bound: the per-row walk's blocks first in its grid
// (attention_few_rows_call). Two entries, so that the few-rows walk alone keeps the registers and schedule it has
// without the per-row walk beside it (measured: docs/gpu.md).
#define ATTENTION_FEW_ROWS_ENTRY(D)                                                                               \
  extern "C" __global__ void __launch_bounds__(256) attention_few_rows_bf16_d##D ATTENTION_SIGNATURE {          \
    allow_dependent_launch();                                                                                     \
    if (attention_block_idle<ATTENTION_EXACT>(row_table, rows, slots, capacity)) return;                          \
    wait_for_previous_grids();                                                                                    \
    attention_few_rows<D, ATTENTION_EXACT>(workspace, q, keys, values, row_table, rows, query_heads, kv_heads,     \
                                           slots, capacity, max_splits, scale, blockIdx.y, false);                \
  }                                                                                                               \
  extern "C" __global__ void __launch_bounds__(256) attention_few_rows_shared_bf16_d##D ATTENTION_SIGNATURE {   \
    allow_dependent_launch();                                                                                     \
    const bool shared = fold == ATTENTION_FOLD_SHARED;                                                            \
    if (few_rows_block_idle<ATTENTION_EXACT>(row_table, rows, slots, capacity, kv_heads, shared)) return;         \
    wait_for_previous_grids();                                                                                    \
    attention_few_rows_call<D, ATTENTION_EXACT>(workspace, q, keys, values, row_table, rows, query_heads,          \
                                                kv_heads, slots, capacity, max_splits, scale, shared);            \
  }

ATTENTION_FEW_ROWS_ENTRY(128)
ATTENTION_FEW_ROWS_ENTRY(256)
