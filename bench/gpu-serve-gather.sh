#!/usr/bin/env bash
# The serve bench on one written full checkpoint at 64 clients with the codec's frame gather off and on
# (--codec-gather: each lane's frames held for N rounds and decoded in one pass for every lane; 1000 holds them to
# each lane's end, so the rounds run without the codec beside them), 256 frames a request.
# DRAMA3_GATHER_RUNS lists the N of each run (default 1 2 4 1); DRAMA3_GATHER_KEEP=1 keeps the checkpoint.
# Usage: bench/gpu-serve-gather.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
for gather in ${DRAMA3_GATHER_RUNS:-1 2 4 1}; do
  run="gather$gather"
  while [ -e "$output/serve-$run.log" ]; do run="$run-again"; done
  serve "$run" --clients 1,64 --frames "${DRAMA3_GATHER_FRAMES:-256}" --requests 8 --compare served \
    --codec-gather "$gather"
done
[ "${DRAMA3_GATHER_KEEP:-0}" = 1 ] || rm -rf "$checkpoint"
