// Deliberately wrong Gated DeltaNet kernels for the kernel contract's controls (test/kernels/): the real kernels'
// code (kernels/cuda/delta_net.cuh, and the gates of kernels/cuda/delta_net.cu) with one planted fault each. Never
// launched by the backend.
//   control_delta_net_conv_history_off_by_one     the conv window reaches one row further back   (accuracy gates)
//   control_delta_net_recurrence_skips_last_row   the recurrence stops one row before the end    (written, accuracy)
//   control_delta_net_gates_without_dt_bias       softplus(a) where the model has softplus(a + dt_bias)  (accuracy)
//   control_delta_net_gates_beta_unrounded        beta left in fp32, not rounded to bf16 (within beta's ulp bound:
//                                                 the ulps gate's bf16-grid check)
#include "delta_net.cuh"

extern "C" __global__ void control_delta_net_conv_history_off_by_one(bf16* out, long long out_row_stride,
                                                                     const bf16* x, long long x_row_stride,
                                                                     const bf16* weight, bf16* conv_state,
                                                                     const int* sequences, int channels) {
  KERNEL_PROLOGUE();
  conv_silu<FAULT_CONV_HISTORY_OFF_BY_ONE>(out, out_row_stride, x, x_row_stride, weight, conv_state, sequences,
                                           channels);
}

extern "C" __global__ void __launch_bounds__(RECURRENCE_THREADS)
    control_delta_net_recurrence_skips_last_row(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g,
                                                const float* beta, float* state, const int* sequences, int key_heads,
                                                int value_heads) {
  KERNEL_PROLOGUE();
  recurrence<FAULT_RECURRENCE_SKIPS_LAST_ROW>(out, qkv, qkv_row_stride, g, beta, state, sequences, key_heads,
                                              value_heads);
}

enum GatesFault { GATES_WITHOUT_DT_BIAS = 1, GATES_BETA_UNROUNDED = 2 };

// delta_net_gates_f32's arithmetic (kernels/cuda/delta_net.cu) with one fault.
template <int FAULT>
__device__ __forceinline__ void gates(float* g, float* beta, const bf16* b, const bf16* a, long long row_stride,
                                      const float* a_log, const float* dt_bias, int rows, int value_heads) {
  const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= (long long)rows * value_heads) return;
  const long long row = index / value_heads;
  const int head = (int)(index - row * value_heads);
  const float bias = FAULT == GATES_WITHOUT_DT_BIAS ? 0.0f : dt_bias[head];
  const float shifted = to_float(a[row * row_stride + head]) + bias;
  const float softplus = shifted > 20.0f ? shifted : log1pf(expf(shifted));
  g[index] = -expf(a_log[head]) * softplus;
  const float sigmoid = 1.0f / (1.0f + expf(-to_float(b[row * row_stride + head])));
  beta[index] = FAULT == GATES_BETA_UNROUNDED ? sigmoid : to_float(to_bf16(sigmoid));
}

extern "C" __global__ void control_delta_net_gates_without_dt_bias(float* g, float* beta, const bf16* b, const bf16* a,
                                                                   long long row_stride, const float* a_log,
                                                                   const float* dt_bias, int rows, int value_heads) {
  KERNEL_PROLOGUE();
  gates<GATES_WITHOUT_DT_BIAS>(g, beta, b, a, row_stride, a_log, dt_bias, rows, value_heads);
}

extern "C" __global__ void control_delta_net_gates_beta_unrounded(float* g, float* beta, const bf16* b, const bf16* a,
                                                                  long long row_stride, const float* a_log,
                                                                  const float* dt_bias, int rows, int value_heads) {
  KERNEL_PROLOGUE();
  gates<GATES_BETA_UNROUNDED>(g, beta, b, a, row_stride, a_log, dt_bias, rows, value_heads);
}
