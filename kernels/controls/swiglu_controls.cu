// A deliberately wrong SwiGLU combine for the kernel contract: swiglu_segments_combine_bf16's body, but gate's and up's
// chunk partials are added from the last chunk down. Accurate, repeatable, fully written and the same at every row
// count: only the byte-for-byte comparison with gemm_segments_combine then swiglu_bf16 can catch it.
#include "swiglu.cuh"

SWIGLU_SEGMENTS_COMBINE_KERNEL(control_swiglu_combine_chunks_descending, true)
