// The sampler compiled with a deliberate fault for the kernel contract: top-k keeps one candidate too many, so a
// top-k 1 lane can pick its second choice. The contract's exact-pick gate must catch it.
#define SAMPLER_EXTRA_CANDIDATES 1
#define SAMPLE_MAIN_ENTRY control_sample_main_top_k_plus_one
#define SAMPLE_CODE_ENTRY control_sample_code_top_k_plus_one
#define SAMPLE_MAIN_BF16_ENTRY control_sample_main_bf16_top_k_plus_one
#define SAMPLE_CODE_BF16_ENTRY control_sample_code_bf16_top_k_plus_one
#include "sampler.cu"
