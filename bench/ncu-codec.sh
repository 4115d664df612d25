#!/usr/bin/env bash
# Nsight Compute's view of the codec decode's register-tiled convs at 64 lanes × 16 frames (fp16 weights): speed of
# light, occupancy, warp stall reasons and shared-memory traffic of the last residual-unit convs of the call (the
# decoder's widest-rate layers) and of its transposed convs, from bench/gpu-codec.ts's profile-only run.
# Usage: bench/ncu-codec.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
log_name=ncu-codec.log
source "$(dirname "$0")/support/ncu-setup.sh"
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats
  --section MemoryWorkloadAnalysis_Tables --section LaunchStats)
# The decoder's own warm frame at creation and the bench's warm call launch 61 tiled convs (6 transposed) each; the
# big call's last residual-unit convs come after 55 more.
for filter in "codec_conv_tiled_f16w 177 3" "codec_transposed_conv_tiled_f16w 12 2"; do
  read -r name skip count <<<"$filter"
  DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_CODEC_BENCH=profile-only "$ncu" --cache-control none \
    --kernel-name "$name" --launch-skip "$skip" --launch-count "$count" "${sections[@]}" \
    "$node_binary" "$prepared/app/bench/gpu-codec.mjs" "$output/under-ncu" >>"$output/ncu-codec.log" 2>&1
done
