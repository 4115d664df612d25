// Deliberately wrong Gated DeltaNet kernels for the kernel contract's controls (test/kernels/): the real kernels'
// code (kernels/cuda/delta_net.cuh) with one planted fault each. Never launched by the backend.
//   control_delta_net_conv_history_off_by_one     the conv window reaches one row further back   (accuracy gates)
//   control_delta_net_recurrence_skips_last_row   the recurrence stops one row before the end    (written, accuracy)
#include "delta_net.cuh"

extern "C" __global__ void control_delta_net_conv_history_off_by_one(bf16* out, long long out_row_stride,
                                                                     const bf16* x, long long x_row_stride,
                                                                     const bf16* weight, bf16* conv_state,
                                                                     const int* sequences, int channels) {
  conv_silu<FAULT_CONV_HISTORY_OFF_BY_ONE>(out, out_row_stride, x, x_row_stride, weight, conv_state, sequences,
                                           channels);
}

extern "C" __global__ void __launch_bounds__(RECURRENCE_THREADS)
    control_delta_net_recurrence_skips_last_row(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g,
                                                const float* beta, float* state, const int* sequences, int key_heads,
                                                int value_heads) {
  recurrence<FAULT_RECURRENCE_SKIPS_LAST_ROW>(out, qkv, qkv_row_stride, g, beta, state, sequences, key_heads,
                                              value_heads);
}
