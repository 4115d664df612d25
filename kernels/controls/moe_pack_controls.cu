// Deliberately wrong expert re-layout for the kernel contract's controls (test/kernels/): moe_pack_rows and
// moe_gather_words (kernels/cuda/moe_pack.cu), each with one planted fault. Never launched by the backend.
//   control_moe_pack_fragments_swapped   each 16-byte chunk holds its words 1 and 2 swapped (row g + 8 and the next
//                                        4 bytes of row g trade places: the mma fragment's k and m halves mixed up)
//                                                                                        (accuracy: bytes exact)
//   control_moe_gather_words_short       each run's last word is left unwritten (off by one)   (accuracy: bytes exact)
#define MOE_PACK_ENTRY control_moe_pack_fragments_swapped
#define MOE_PACK_SWAPS_WORDS 1
#define MOE_GATHER_ENTRY control_moe_gather_words_short
#define MOE_GATHER_SKIPS_LAST_WORD 1
#include "moe_pack.cu"
