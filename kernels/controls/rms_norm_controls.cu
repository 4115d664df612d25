// A deliberately wrong tower input for the kernel contract: tower_input_bf16's body, but its code half is normed with
// the input half's weight (hnorm for enorm). Every element is written and the row's reduction order is the real one,
// so only the accuracy and ulp gates can catch it. The contract's shapes put the input half at least as wide as the
// code half until the control is caught, so the weight it reads is in bounds.
#include "rms_norm.cuh"

TOWER_INPUT_KERNEL(control_tower_input_code_normed_with_input_weight, bf16, true)
