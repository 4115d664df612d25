// Deliberately wrong Gated DeltaNet kernels for the kernel contract's controls (test/kernels/): the real kernels'
// code (kernels/cuda/delta_net.cuh, and the gates of kernels/cuda/delta_net.cu) with one planted fault each. Never
// launched by the backend.
//   control_delta_net_conv_history_off_by_one     the conv window reaches one row further back   (accuracy gates)
//   control_delta_net_recurrence_skips_last_row   the recurrence stops one row before the end    (written, accuracy)
//   control_delta_net_gates_without_dt_bias       softplus(a) where the model has softplus(a + dt_bias)  (accuracy)
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

// delta_net_gates_f32's signature and arithmetic, with dt_bias never added.
extern "C" __global__ void control_delta_net_gates_without_dt_bias(float* g, float* beta, const bf16* b, const bf16* a,
                                                                   long long row_stride, const float* a_log,
                                                                   const float* dt_bias, int rows, int value_heads) {
  KERNEL_PROLOGUE();
  const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= (long long)rows * value_heads) return;
  const long long row = index / value_heads;
  const int head = (int)(index - row * value_heads);
  (void)dt_bias;
  const float shifted = to_float(a[row * row_stride + head]);
  const float softplus = shifted > 20.0f ? shifted : log1pf(expf(shifted));
  g[index] = -expf(a_log[head]) * softplus;
  beta[index] = to_float(to_bf16(1.0f / (1.0f + expf(-to_float(b[row * row_stride + head])))));
}
