// The codec's DAC decoder convolutions (MODEL.md §6) over many lanes at once. Activations are fp32 rows [T, C]
// (channels contiguous, rows `stride` elements apart); a call is the sequence table int32 [Q, 4] = (slot, firstRow,
// rowCount, startPosition) in the table's unit (frames), scaled by `row_scale` rows per unit at this layer. Sequence
// q's rows are rows firstRow·row_scale .. of x, and its carried state is slot `slot` of the history slab (zeroed for
// a fresh lane). No two sequences of one call may share a slot.
//
// codec_conv_{f32,f16w}: causal dilated conv, weights [Cin, K, Cout] (fp32, or fp16 rounded to nearest even)
//   v[t, o] = bias?[o] + Σ_i Σ_k w[i, k, o] · in[t − (K − 1 − k)·d, i] with in = history ++ snake?(x)
//   out[t, o] = act(residual?[t, o] + scale?[o] · v[t, o]), the scaled residual in one fma; act: identity, tanh or
//   exact GELU; bias, scale, residual each null when absent (at k = 1 these are the codec's linears)
//   history: [S, (K − 1)·d, Cin] fp32, the conv's last inputs (after Snake), oldest first; read only
//   alpha: [Cin] Snake on the input, or null
//   Sums in fp32: each chunk of 32 input channels from zero (channel, then tap), chunks added in ascending order.
// codec_conv_narrow_{f32,f16w}: the same conv, arguments and order, one thread per (row, output): for ≤ 8 outputs.
// codec_conv_tiled_{f32,f16w}: the same conv, arguments and order, 8 outputs × 8 rows a thread: for K ≤ 8.
// codec_transposed_conv_{f32,f16w}: causal transposed conv, stride s, K = m·s, the last K − s outputs trimmed
//   out[n·s + j, o] = bias[o] + Σ_i Σ_{q<m} w[i, j + q·s, o] · in[n − q, i]; history [S, m − 1, Cin]; out rows are
//   s times the input's (row_scale counts input rows). The same chunked order.
// codec_transposed_conv_tiled_{f32,f16w}: the same, 8 outputs × 8 rows of one phase a thread: for s | 8, s | K ≤ 16.
// codec_conv_mma_f16: the same conv on tensor cores (codec_conv_mma.cuh), fp16 weights [Cin, K, Cout] and the
//   inputs (after Snake) rounded to fp16, fp32 sums per group of G input channels (stages ascending, taps, slices),
//   the groups added ascending: the `f16` precision; a transposed conv runs on it as a conv of s·Cout outputs.
//   partials and partial_rows are unused; so are the staged arguments.
// codec_conv_mma_split_f16: the same groups' sums, each group on its own blocks (grid.x = output blocks × groups),
//   written to partials [groups, partial_rows, Cout] (rows as in out); then codec_conv_combine adds them ascending
//   and applies the epilogue: the same bits as codec_conv_mma_f16.
// codec_conv_stage_f16: the tensor-core conv's inputs of a call, once: fp16(conv input) of each sequence's carried
//   rows then its rows (Snake on x) into its region of staged [padded row][staged_stride], region z at padded row
//   firstRow·row_scale + z·H (staged_stride: Cin rounded up to 8, the channels past Cin zero). grid.z = sequences.
// codec_conv_mma_staged_f16, codec_conv_mma_staged_split_f16: the two above reading those regions instead of
//   staging x and the history themselves, tiled per sequence or (staged_flat) over the call's padded rows as one:
//   the same fp16 values in the same order, so the same bits.
#include "codec_conv_mma.cuh"

CODEC_CONV_ENTRY(codec_conv_f32, float, CODEC_FAULT_NONE)
CODEC_CONV_ENTRY(codec_conv_f16w, __half, CODEC_FAULT_NONE)
CODEC_NARROW_ENTRY(codec_conv_narrow_f32, float, CODEC_FAULT_NONE)
CODEC_NARROW_ENTRY(codec_conv_narrow_f16w, __half, CODEC_FAULT_NONE)
CODEC_TILED_ENTRY(codec_conv_tiled_f32, float, CODEC_FAULT_NONE)
CODEC_TILED_ENTRY(codec_conv_tiled_f16w, __half, CODEC_FAULT_NONE)
CODEC_TRANSPOSED_ENTRY(codec_transposed_conv_f32, float, CODEC_FAULT_NONE)
CODEC_TRANSPOSED_ENTRY(codec_transposed_conv_f16w, __half, CODEC_FAULT_NONE)
CODEC_TILED_TRANSPOSED_ENTRY(codec_transposed_conv_tiled_f32, float, CODEC_FAULT_NONE)
CODEC_TILED_TRANSPOSED_ENTRY(codec_transposed_conv_tiled_f16w, __half, CODEC_FAULT_NONE)
CODEC_MMA_ENTRY(codec_conv_mma_f16, CODEC_FAULT_NONE, false, false)
CODEC_MMA_ENTRY(codec_conv_mma_split_f16, CODEC_FAULT_NONE, true, false)
CODEC_MMA_ENTRY(codec_conv_mma_staged_f16, CODEC_FAULT_NONE, false, true)
CODEC_MMA_ENTRY(codec_conv_mma_staged_split_f16, CODEC_FAULT_NONE, true, true)
CODEC_STAGE_ENTRY(codec_conv_stage_f16, CODEC_FAULT_NONE)
CODEC_MMA_COMBINE_ENTRY(codec_conv_combine, CODEC_FAULT_NONE)
CODEC_HISTORY_ENTRY(codec_history_update, CODEC_FAULT_NONE)
CODEC_SNAKE_ENTRY(codec_snake, CODEC_FAULT_NONE)
