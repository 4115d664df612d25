// Gated DeltaNet (MODEL.md §2) over LAYOUT.md's sequence table and slabs. A call is Q sequences; sequence q is
// (slot, firstRow, rowCount, startPosition) of sequences [Q, 4] int32, its rows are rows firstRow .. of every
// activation buffer, and its state is slot `slot` of the slabs (zeroed by admission for a fresh lane). No two
// sequences of one call may share a slot. Each kernel walks a sequence's rows in order, reading the slot's state at
// the sequence's start and writing it at its end, so any cut of a prompt into calls gives the same bits.
//
// delta_net_conv_silu_bf16: causal depthwise conv (width 4) + SiLU over the q|k|v channels
//   x: the fused projection's rows, channels 0..C−1 being q|k|v, rows x_row_stride elements apart
//   weight: [C, 4] bf16 (torch's [C, 1, 4]); conv_state: [S, 3, C] bf16, the last 3 inputs, oldest first
//   out: [T, C] bf16, rows out_row_stride apart
//   out[t, c] = silu(Σ_j w[c, j] · in[t − 3 + j, c]) with in = state ++ x; fp32, j in order; one rounding to bf16.
//   The new state is the last 3 rows of state ++ x, copied exactly.
//   Grid (⌈C/256⌉, row tiles, Q), 256 threads: one thread per channel of 8 consecutive rows.
//
// delta_net_gates_f32: beta = sigmoid(b), g = −exp(A_log) · softplus(a + dt_bias) (torch's softplus: linear above 20)
//   b, a: [T, Vh] bf16 columns of the fused projection, rows row_stride apart; a_log, dt_bias: [Vh] fp32
//   (delta_net_gates_bf16_parameters: [Vh] bf16, as the checkpoint stores them, widened exactly)
//   g, beta: [T, Vh] fp32; rounding point: beta to bf16 (kept in fp32 storage). One thread per (row, value head).
//
// delta_net_recurrence_bf16: the gated delta rule with fp32 state
//   qkv: the conv output, q = [Kh, 128] at column 0, k at Kh·128, v = [Vh, 128] at 2·Kh·128, rows qkv_row_stride apart
//   g, beta: [T, Vh] fp32; state: [S, Vh, 128 (key), 128 (value)] fp32; out: [T, Vh, 128] bf16
//   value head h reads key head h / (Vh / Kh); q, k L2-normalised (eps 1e-6), q scaled by 1/sqrt(128), in fp32
//   per row: S ← S·exp(g); δ = β(v − Sᵀk); S ← S + k ⊗ δ; o = Sᵀq (of the updated S); one rounding to bf16 at o.
//   The recurrent form for decode and prefill alike: the state stays in registers across all of a sequence's rows
//   (32 rows at a time are staged in shared memory, the next 32 loaded into registers while these are computed;
//   neither changes any arithmetic), so chunking a prompt cannot change a bit. q, k and v are read as bf16 pairs:
//   qkv must be 4-byte aligned and qkv_row_stride even.
//   Grid (4 column groups, Vh, Q), 128 threads: thread (warp w, lane l) owns value column 32·x + 8w + l/4 and keys
//   4i + l%4 (i < 32). Sᵀk and Sᵀq: each thread's 32 keys in two interleaved chains (even i, odd i) added, then the
//   four key groups by xor-1 then xor-2 butterfly: the same order for every row, call and chunk.
#include "delta_net.cuh"

extern "C" __global__ void delta_net_conv_silu_bf16(bf16* out, long long out_row_stride, const bf16* x,
                                                    long long x_row_stride, const bf16* weight, bf16* conv_state,
                                                    const int* sequences, int channels) {
  KERNEL_PROLOGUE();
  conv_silu<FAULT_NONE>(out, out_row_stride, x, x_row_stride, weight, conv_state, sequences, channels);
}

template <typename Parameter>
__device__ __forceinline__ void gates(float* g, float* beta, const bf16* b, const bf16* a, long long row_stride,
                                      const Parameter* a_log, const Parameter* dt_bias, int rows, int value_heads) {
  const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= (long long)rows * value_heads) return;
  const long long row = index / value_heads;
  const int head = (int)(index - row * value_heads);
  const float a_value = to_float(a[row * row_stride + head]);
  gate_values(to_float(b[row * row_stride + head]), a_value, a_log, dt_bias, head, g[index], beta[index]);
}

extern "C" __global__ void delta_net_gates_f32(float* g, float* beta, const bf16* b, const bf16* a,
                                               long long row_stride, const float* a_log, const float* dt_bias,
                                               int rows, int value_heads) {
  KERNEL_PROLOGUE();
  gates(g, beta, b, a, row_stride, a_log, dt_bias, rows, value_heads);
}

extern "C" __global__ void delta_net_gates_bf16_parameters(float* g, float* beta, const bf16* b, const bf16* a,
                                                           long long row_stride, const bf16* a_log,
                                                           const bf16* dt_bias, int rows, int value_heads) {
  KERNEL_PROLOGUE();
  gates(g, beta, b, a, row_stride, a_log, dt_bias, rows, value_heads);
}

extern "C" __global__ void __launch_bounds__(RECURRENCE_THREADS)
    delta_net_recurrence_bf16(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g, const float* beta,
                              float* state, const int* sequences, int key_heads, int value_heads) {
  KERNEL_PROLOGUE();
  recurrence<FAULT_NONE>(out, qkv, qkv_row_stride, g, beta, state, sequences, key_heads, value_heads);
}
