#!/usr/bin/env bash
# The second of two device calls that settle the decode changes built without a device (bench/gpu-decode-changes.sh
# is the first): the frame bench at batches 1, 16 and 64 with every switch off, with each DeltaNet fold alone and
# both, with decode attention dealt to blocks of 2 query heads, with the attention's prepare in its projection's
# combine, with all of them, and off again. Every run's draws must be the same digests. Leaves frames-variants.log at
# the top of <output dir>, appended run by run, so a call cut short still returns the runs that finished.
# Carry: DRAMA3_CARRY_ENTRIES=bench/gpu-frames.ts (and the first call's entries, to prepare once)
# Usage: bench/gpu-decode-variants.sh <prepared folder> <output dir>
set -uo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
here="$(dirname "${BASH_SOURCE[0]}")"
folds="DRAMA3_DELTA_NET_COMBINE=fused DRAMA3_DELTA_NET_NORM=fused"
DRAMA3_FRAMES_BATCHES="${DRAMA3_FRAMES_BATCHES:-1,16,64}" bash "$here/gpu-frames-variants.sh" "$1" "$2" \
  "off" "combine DRAMA3_DELTA_NET_COMBINE=fused" "norm DRAMA3_DELTA_NET_NORM=fused" "folds $folds" \
  "heads-2 DRAMA3_ATTENTION_HEADS_PER_BLOCK=2" "prepare DRAMA3_ATTENTION_PREPARE=fused" \
  "all $folds DRAMA3_ATTENTION_HEADS_PER_BLOCK=2 DRAMA3_ATTENTION_PREPARE=fused" "off"
