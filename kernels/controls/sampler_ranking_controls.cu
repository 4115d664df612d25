// The sampler compiled with a deliberate fault for the kernel contract: the full ranking (top-k off or above 64)
// sorts ascending, so such a lane draws from its least likely candidates. The contract's exact-pick gate must catch it.
#define SAMPLER_RANKING_ASCENDING 1
#define SAMPLER_EXTRA_CANDIDATES 0
#define SAMPLE_MAIN_ENTRY control_sample_main_ranked_ascending
#define SAMPLE_CODE_ENTRY control_sample_code_ranked_ascending
#define SAMPLE_MAIN_BF16_ENTRY control_sample_main_bf16_ranked_ascending
#define SAMPLE_CODE_BF16_ENTRY control_sample_code_bf16_ranked_ascending
#include "sampler.cu"
