#!/usr/bin/env bash
# Per-kernel GPU durations of one recorded frame step at batch 1 and at batch 64 (full geometry), read by Nsight
# Compute inside the CUDA graph (--graph-profiling node; only the range bench/gpu-frames.ts opens with
# DRAMA3_PROFILER_RANGE=1), summed by kernel by bench/gpu-ncu-summary.ts. The sum of the durations against the step's
# wall time (bench/gpu-frames.ts without a profiler) is the time the GPU spends between kernels.
# Usage: bench/ncu-step.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
mkdir -p "$2"
output="$(cd "$2" && pwd)"
ncu="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
if [ -z "$ncu" ]; then
  echo "ncu-step: no Nsight Compute (ncu) on this machine" | tee "$output/ncu-step.log"
  exit 0
fi
node_binary="$(mktemp -d)/node"
xz -dc "$prepared/node.xz" >"$node_binary" && chmod +x "$node_binary" || exit 1
DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_PROFILER_RANGE=1 "$ncu" --clock-control none --profile-from-start off \
  --graph-profiling node --metrics gpu__time_duration.sum --print-units base --csv --log-file "$output/ncu-step.csv" \
  "$node_binary" "$prepared/app/bench/gpu-frames.mjs" "$output/under-ncu" >"$output/ncu-step.log" 2>&1
"$node_binary" "$prepared/app/bench/gpu-ncu-summary.mjs" "$output" 2>&1 | tee -a "$output/ncu-step.log"
