// Deliberately wrong expert re-layout for the kernel contract's controls (test/kernels/): moe_pack_rows
// (kernels/cuda/moe_pack.cu) with one planted fault. Never launched by the backend.
//   control_moe_pack_fragments_swapped   each 16-byte chunk holds its words 1 and 2 swapped (row g + 8 and the next
//                                        4 bytes of row g trade places: the mma fragment's k and m halves mixed up)
//                                                                                        (accuracy: bytes exact)
#define MOE_PACK_ENTRY control_moe_pack_fragments_swapped
#define MOE_PACK_SWAPS_WORDS 1
#include "moe_pack.cu"
