#!/usr/bin/env bash
# The serve bench with the scheduler's look-ahead (the next round's step queued before this round's is read back;
# the default on cuda) and without it (DRAMA3_STEP_LOOKAHEAD=off), on one written full checkpoint; then the load
# alone on that checkpoint with the default slots and reads and with longer ones (bench/gpu-load.ts, each load in a
# fresh process, the page cache evicted before each).
# Usage: bench/gpu-serve-look-ahead.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve ahead --clients 1,64 --frames 256 --requests 8 --compare served
DRAMA3_STEP_LOOKAHEAD=off serve plain --clients 64 --frames 256 --requests 8 --compare served
loads='streamed;streamed, 64 MiB slots, 64 MiB reads;streamed, 128 MiB slots, 128 MiB reads;streamed, 256 MiB slots, 64 MiB reads'
"$node_binary" "$prepared/app/bench/gpu-load.mjs" "$output/load" --checkpoint "$checkpoint" --loads "$loads" \
  >"$output/load.log" 2>&1
echo "load: exit $?"
rm -rf "$checkpoint"
