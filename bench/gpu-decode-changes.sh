#!/usr/bin/env bash
# The first of two device calls that settle the decode changes built without a device (docs/gpu.md, "Not yet run on
# a GPU"; bench/gpu-decode-variants.sh is the second): the kernel contract's DeltaNet, sampler, router and attention
# cases with their controls, contracts 1 to 3 with every switch of those changes on, and the sampler bench. Each log
# is copied to the top of <output dir> as soon as its step ends, so a call cut short still returns what finished:
# contract-delta-net.log, contract-sampler.log, contract-router.log, contract-attention.log,
# speech-model-contracts.log, gpu-sampler.log.
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
switches=(DRAMA3_DELTA_NET_COMBINE=fused DRAMA3_DELTA_NET_NORM=fused DRAMA3_ATTENTION_HEADS_PER_BLOCK=2
  DRAMA3_ATTENTION_PREPARE=fused)
mkdir -p "$output"
status=0

# keep <step folder> <log in it> <name at the top>: the step's log kept, its folder gone (few files come back).
keep() {
  cp "$output/$1/$2" "$output/$3" 2>/dev/null
  rm -rf "${output:?}/$1"
}

# Each pair: the substring of the contract's case names, then the log's name.
for pair in delta_net:delta-net sample:sampler router:router attention:attention; do
  only="${pair%%:*}"
  name="${pair#*:}"
  DRAMA3_CONTRACT_ONLY="$only" bash "$run" "$prepared" "$output/c-$name" test/kernels/contract.test.ts || status=1
  keep "c-$name" contract.test.log "contract-$name.log"
done
env "${switches[@]}" bash "$run" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
keep s speech-model-contracts.test.log speech-model-contracts.log
bash "$run" "$prepared" "$output/b" bench/gpu-sampler.ts || status=1
keep b gpu-sampler.log gpu-sampler.log
exit "$status"
