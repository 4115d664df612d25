// The codec's causal windowed transformer (MODEL.md §6: post-module, pre-module) apart from its linears, over many
// lanes at once. Activations are fp32 rows [T, C] (channels contiguous); qkv rows are [T, 3·width] = [q heads | k heads
// | v heads], width = heads·head_dim. A call is the sequence table int32 [Q, 4] = (slot, firstRow, rowCount,
// startPosition) in table units (frames), scaled by `row_scale` rows per unit: row r of sequence q is row
// firstRow·row_scale + r of the buffers, at absolute position startPosition·row_scale + r. Each lane's ring of keys
// and values, [S, window, width] fp32 indexed by position % window, lives at its slot; no two sequences of one call
// share a slot. All arithmetic is the cpu transformer's (src/codec/transformer.ts, src/numeric/norms.ts) in fp64,
// rounded once to fp32, so that a row's bits depend on its position and the sizes alone.
//
// codec_rms_norm: out[r, c] = x[r, c] · (1 / sqrt(Σ x² / width + eps)) · w[c]; one block per row; out ≠ x
// codec_rope: interleaved RoPE in place on q and k of qkv; pair i of a head at position p turns by the checkpoint
//   table's (cos, sin)[p, i] where p < table_positions, else fround(cos/sin(p / frequencies[i])); the rotation in fp64
// codec_window_attention: out [T, width]: row p of each head attends positions max(0, p − window + 1) … p ascending,
//   scores q·k / sqrt(head_dim), softmax and the weighted sum of v in fp64; positions from the sequence's start on
//   read this call's k/v rows of qkv, earlier ones the slot's ring; never writes the ring
// codec_ring_update: after the attention, each sequence's last min(rows, window) k and v rows into its slot's ring
// codec_swiglu: out [T, I] = fround(silu(gate)) · up, gate_up [T, 2·I] = [gate | up] per row
#include "codec_window_attention.cuh"

extern "C" __global__ void __launch_bounds__(TRANSFORMER_NORM_THREADS)
    codec_rms_norm(float* out, const float* x, const float* weight, int rows, int width, double eps) {
  KERNEL_PROLOGUE();
  transformer_rms_norm(out, x, weight, rows, width, eps);
}

extern "C" __global__ void codec_swiglu(float* out, const float* gate_up, long long rows, int intermediate) {
  KERNEL_PROLOGUE();
  transformer_swiglu(out, gate_up, rows, intermediate);
}

CODEC_ROPE_ENTRY(codec_rope, TRANSFORMER_FAULT_NONE)
CODEC_ATTENTION_ENTRY(codec_window_attention, TRANSFORMER_FAULT_NONE)
CODEC_RING_ENTRY(codec_ring_update, TRANSFORMER_FAULT_NONE)
