// Deliberately wrong RMSNorm-family kernels for the kernel contract.
// A wrong tower input: tower_input_bf16's body, but its code half is normed with
// the input half's weight (hnorm for enorm). Every element is written and the row's reduction order is the real one,
// so only the accuracy and ulp gates can catch it. The contract's shapes put the input half at least as wide as the
// code half until the control is caught, so the weight it reads is in bounds.
#include "rms_norm.cuh"

TOWER_INPUT_KERNEL(control_tower_input_code_normed_with_input_weight, bf16, true)

// A wrong residual norm of a split projection: add_partials_rms_norm_bf16's body, but each element's K chunks are added
// from the last one down. Accurate, repeatable and fully written: only a byte-for-byte comparison with the ascending
// order catches it (the equivalence with gemm_combine then add_rms_norm_bf16, or the invariance against calls of more
// than 64 rows, which sum the chunks in the GEMM's registers).
ADD_PARTIALS_RMS_NORM_KERNEL(control_add_partials_rms_norm_chunks_descending, bf16, true)
