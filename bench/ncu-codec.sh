#!/usr/bin/env bash
# Nsight Compute's view of the codec decode's tensor-core convs at 64 lanes × 16 frames (the f16 precision): every
# launch of the decoder's conv (codec_conv_mma_staged_f16, its inputs staged once a layer; DRAMA3_NCU_CODEC_KERNEL
# names another) in bench/gpu-codec.ts's profile-only run timed first (duration and grid, one pass each),
# then the longest one profiled in depth: speed of light, occupancy, warp stall reasons, the scheduler, the memory
# tables and the source lines where warps stall most.
# Usage: bench/ncu-codec.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
log_name=ncu-codec.log
source "$(dirname "$0")/support/ncu-setup.sh"
kernel=${DRAMA3_NCU_CODEC_KERNEL:-codec_conv_mma_staged_f16}
run_bench() {
  DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_CODEC_BENCH=profile-only DRAMA3_CODEC_PROFILE_PRECISION=f16 "$ncu" \
    --cache-control none --kernel-name "$kernel" "$@" "$node_binary" "$prepared/app/bench/gpu-codec.mjs" \
    "$output/under-ncu"
}
run_bench --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread --csv --print-units base \
  >"$output/ncu-codec-launches.csv" 2>>"$output/$log_name"
# The launch with the longest duration: its index among the kernel's launches (the ID column counts every profiled one).
longest="$(awk -F'","' '/gpu__time_duration.sum/ { gsub(/"/, "", $NF); gsub(/,/, "", $NF); if ($NF + 0 > best) { best = $NF + 0; id = $1 } } END { gsub(/"/, "", id); print id }' "$output/ncu-codec-launches.csv")"
echo "longest $kernel launch: profiled launch $longest" | tee -a "$output/$log_name"
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats
  --section SourceCounters)
run_bench --launch-skip "${longest:-0}" --launch-count 1 "${sections[@]}" >>"$output/$log_name" 2>&1
