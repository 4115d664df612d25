#!/usr/bin/env bash
# One device call that checks the tree after the decode folds were settled (docs/gpu.md, "decode folds settled"):
# the whole kernel contract in six parts, contracts 1 to 3 on CUDA, and the frame bench at batches 1 to 64 twice.
# (At ad35d57 its bench runs also dealt decode attention to blocks of 4 and 2 query heads, the figures that made 4
# the default.) Leaves at the top of
# <output dir>: contract-part-0.txt … contract-part-5.txt, speech-model-contracts.log, frames-variants.log.
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/contract.test.ts,test/kernels/speech-model-contracts.test.ts,bench/gpu-frames.ts
# Usage: bench/gpu-decode-settled.sh <prepared folder> <output dir>
set -uo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$1"
output="$2"
here="$(dirname "${BASH_SOURCE[0]}")"
device="$here/../scripts/device"
mkdir -p "$output"
status=0

bash "$device/contract-parts.sh" "$prepared" "$output/w" 6 >"$output/contract-parts.txt" 2>&1 || status=1
for part in 0 1 2 3 4 5; do cp "$output/w/part-$part.txt" "$output/contract-part-$part.txt" 2>/dev/null; done
cat "$output/contract-parts.txt" >>"$output/contract-part-0.txt"
rm -rf "${output:?}/w" "$output/contract-parts.txt"

bash "$device/run.sh" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
cp "$output/s/speech-model-contracts.test.log" "$output/speech-model-contracts.log" 2>/dev/null
rm -rf "${output:?}/s"

DRAMA3_FRAMES_BATCHES=1,2,4,8,16,32,64 bash "$here/gpu-frames-variants.sh" "$prepared" "$output/v" "default" \
  "default" || status=1
cp "$output/v/frames-variants.log" "$output/frames-variants.log" 2>/dev/null
rm -rf "${output:?}/v"
exit "$status"
