#!/usr/bin/env bash
# Nsight Compute's full report (speed of light, memory, warp stalls, occupancy, launch) for the first launches of
# chosen kernels inside one recorded frame step at batch 1 (full geometry, bench/gpu-frames.ts's profiler range),
# with the caches left as the previous kernel left them: why a kernel of the step takes the time it does.
# Usage: bench/ncu-kernels.sh <prepared folder> <output dir> <kernel name regex> [launches, default 6]
set -uo pipefail
log_name=ncu-kernels.log
regex="${3:?usage: $0 <prepared folder> <output dir> <kernel name regex> [launches]}"
launches="${4:-6}"
source "$(dirname "$0")/support/ncu-setup.sh" "$1" "$2"
DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_PROFILER_RANGE=1 DRAMA3_FRAMES_BATCHES=1 "$ncu" --clock-control none \
  --cache-control none --profile-from-start off --graph-profiling node --kernel-name "regex:$regex" \
  --launch-count "$launches" --set full --print-units base --log-file "$output/ncu-kernels.txt" \
  "$node_binary" "$prepared/app/bench/gpu-frames.mjs" "$output/under-ncu" >"$output/$log_name" 2>&1
echo "ncu: exit $?" | tee -a "$output/$log_name"
