// A deliberately wrong activation quantiser for the kernel contract: the scale is amax/240 (the e4m3fnuz maximum)
// instead of amax/448, so every byte and scale differs from the release's e4m3fn form. The exact gates must catch it.
// kernels/cuda/quantize_fp8.cu compiled under the control's name, so its argument layout is the real kernel's.
#define QUANTIZE_ENTRY control_quantize_e4m3_fnuz_scale
#define QUANTIZE_MAXIMUM 240.0f
#include "quantize_fp8.cu"
