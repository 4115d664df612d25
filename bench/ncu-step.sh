#!/usr/bin/env bash
# Per-kernel GPU durations of one recorded frame step at batch 1 and at batch 64 (full geometry), read by Nsight
# Compute inside the CUDA graph (--graph-profiling node; only the range bench/gpu-frames.ts opens with
# DRAMA3_PROFILER_RANGE=1), summed by kernel by bench/gpu-ncu-summary.ts. The sum of the durations against the step's
# wall time (bench/gpu-frames.ts without a profiler) is the time the GPU spends between kernels. Nsight Compute
# flushes the caches before each kernel unless DRAMA3_NCU_CACHE=none (then each kernel meets the L2 its predecessors
# left, nearer a real step for the small kernels that read what the last one wrote).
# Usage: bench/ncu-step.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
log_name=ncu-step.log
source "$(dirname "$0")/support/ncu-setup.sh"
DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_PROFILER_RANGE=1 "$ncu" --clock-control none --cache-control "${DRAMA3_NCU_CACHE:-all}" --profile-from-start off \
  --graph-profiling node --metrics gpu__time_duration.sum --print-units base --csv --log-file "$output/ncu-step.csv" \
  "$node_binary" "$prepared/app/bench/gpu-frames.mjs" "$output/under-ncu" >"$output/ncu-step.log" 2>&1
"$node_binary" "$prepared/app/bench/gpu-ncu-summary.mjs" "$output" 2>&1 | tee -a "$output/ncu-step.log"
