#!/usr/bin/env bash
# One device call that settles the DeltaNet decode folds (docs/gpu.md, "two DeltaNet decode folds"): the kernel
# contract's DeltaNet cases and controls, contracts 1 to 3 with both folds on, and the frame bench alternating the
# folds off and on at batches 1, 4, 16 and 64. Three logs come back at the top of <output dir>: contract.log,
# speech-model-contracts.log and frames-variants.log (the bench's draws must not change with a fold).
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/contract.test.ts,test/kernels/speech-model-contracts.test.ts,bench/gpu-frames.ts
# Usage: bench/gpu-delta-net-folds.sh <prepared folder> <output dir>
set -uo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$1"
output="$2"
here="$(dirname "${BASH_SOURCE[0]}")"
run="$here/../scripts/device/run.sh"
both=(DRAMA3_DELTA_NET_COMBINE=fused DRAMA3_DELTA_NET_NORM=fused)
mkdir -p "$output"
status=0
DRAMA3_CONTRACT_ONLY=delta_net bash "$run" "$prepared" "$output/c" test/kernels/contract.test.ts || status=1
env "${both[@]}" bash "$run" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
DRAMA3_FRAMES_BATCHES="${DRAMA3_FRAMES_BATCHES:-1,4,16,64}" bash "$here/gpu-frames-variants.sh" "$prepared" "$output/f" \
  "apart" "combine DRAMA3_DELTA_NET_COMBINE=fused" "norm DRAMA3_DELTA_NET_NORM=fused" "both ${both[*]}" \
  "apart" "both ${both[*]}" || status=1
cp "$output/c/contract.test.log" "$output/contract.log" 2>/dev/null
cp "$output/s/speech-model-contracts.test.log" "$output/speech-model-contracts.log" 2>/dev/null
cp "$output/f/frames-variants.log" "$output/frames-variants.log" 2>/dev/null
rm -rf "$output/c" "$output/s" "$output/f"
exit "$status"
