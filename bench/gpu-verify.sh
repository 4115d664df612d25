#!/usr/bin/env bash
# One device call that checks the tree: the whole kernel contract in six parts, contracts 1 to 3 on CUDA, and the
# frame bench at batches DRAMA3_FRAMES_BATCHES (default 1 and 64). Without a before folder the bench runs twice;
# with one (fatbins built from an earlier commit's kernels, carried inside the prepared folder) it alternates that
# build with this one, twice each (bench/gpu-kernel-variants.sh). Leaves at the top of <output dir>:
# contract-part-0.txt … contract-part-5.txt, speech-model-contracts.log, and frames-variants.log or kernel-variants.log.
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/contract.test.ts,test/kernels/speech-model-contracts.test.ts,bench/gpu-frames.ts
# Usage: bench/gpu-verify.sh <prepared folder> <output dir> [before folder]
set -uo pipefail
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: $0 <prepared folder> <output dir> [before folder]" >&2
  exit 2
fi
prepared="$1"
output="$2"
before="${3:-}"
here="$(dirname "${BASH_SOURCE[0]}")"
device="$here/../scripts/device"
mkdir -p "$output"
status=0
export DRAMA3_FRAMES_BATCHES="${DRAMA3_FRAMES_BATCHES:-1,64}"

if [ -n "$before" ]; then
  bash "$here/gpu-kernel-variants.sh" "$prepared" "$output/v" bench/gpu-frames.ts "before $before" "after" \
    "before $before" "after" || status=1
  cp "$output/v/kernel-variants.log" "$output/kernel-variants.log" 2>/dev/null
else
  bash "$here/gpu-frames-variants.sh" "$prepared" "$output/v" "default" "default" || status=1
  cp "$output/v/frames-variants.log" "$output/frames-variants.log" 2>/dev/null
fi
rm -rf "${output:?}/v"

bash "$device/run.sh" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
cp "$output/s/speech-model-contracts.test.log" "$output/speech-model-contracts.log" 2>/dev/null
rm -rf "${output:?}/s"

bash "$device/contract-parts.sh" "$prepared" "$output/w" 6 >"$output/contract-parts.txt" 2>&1 || status=1
for part in 0 1 2 3 4 5; do cp "$output/w/part-$part.txt" "$output/contract-part-$part.txt" 2>/dev/null; done
cat "$output/contract-parts.txt" >>"$output/contract-part-0.txt"
rm -rf "${output:?}/w" "$output/contract-parts.txt"
exit "$status"
