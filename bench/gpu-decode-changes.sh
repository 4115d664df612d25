#!/usr/bin/env bash
# One device call that settles the decode changes built without a device (docs/gpu.md, "Not yet run on a GPU"): the
# kernel contract's DeltaNet, sampler and router cases with their controls, contracts 1 to 3 with both DeltaNet folds
# on, the frame bench alternating the folds off and on at batches 1, 4, 16 and 64 (their draws must not change), and
# the sampler bench. Each log is copied to the top of <output dir> as soon as its step ends, so a call cut short still
# returns what finished: contract-delta-net.log, contract-sampler.log, contract-router.log,
# speech-model-contracts.log, frames-variants.log, gpu-sampler.log.
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/contract.test.ts,test/kernels/speech-model-contracts.test.ts,bench/gpu-frames.ts,bench/gpu-sampler.ts
# Usage: bench/gpu-decode-changes.sh <prepared folder> <output dir>
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

# keep <step folder> <log in it> <name at the top>: the step's log kept, its folder gone (few files come back).
keep() {
  cp "$output/$1/$2" "$output/$3" 2>/dev/null
  rm -rf "${output:?}/$1"
}

DRAMA3_CONTRACT_ONLY=delta_net bash "$run" "$prepared" "$output/c1" test/kernels/contract.test.ts || status=1
keep c1 contract.test.log contract-delta-net.log
DRAMA3_CONTRACT_ONLY=sample bash "$run" "$prepared" "$output/c2" test/kernels/contract.test.ts || status=1
keep c2 contract.test.log contract-sampler.log
DRAMA3_CONTRACT_ONLY=router bash "$run" "$prepared" "$output/c3" test/kernels/contract.test.ts || status=1
keep c3 contract.test.log contract-router.log
env "${both[@]}" bash "$run" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
keep s speech-model-contracts.test.log speech-model-contracts.log
DRAMA3_FRAMES_BATCHES="${DRAMA3_FRAMES_BATCHES:-1,4,16,64}" bash "$here/gpu-frames-variants.sh" "$prepared" "$output/f" \
  "apart" "combine DRAMA3_DELTA_NET_COMBINE=fused" "norm DRAMA3_DELTA_NET_NORM=fused" "both ${both[*]}" \
  "apart" "both ${both[*]}" || status=1
keep f frames-variants.log frames-variants.log
bash "$run" "$prepared" "$output/b" bench/gpu-sampler.ts || status=1
keep b gpu-sampler.log gpu-sampler.log
exit "$status"
