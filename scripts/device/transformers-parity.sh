#!/usr/bin/env bash
# The CUDA backbone against transformers, in one device call: makes the `cuda` geometry's Qwen3.5-MoE fixture with
# tools/oracle/qwen35_moe.py (the GPU machine's PyTorch and transformers; its fp32 run on the CPU, its bf16 run on the
# GPU) in a folder of its own, then runs test/kernels/transformers-parity-cuda.test.ts on it. Leaves oracle.log and
# transformers-parity-cuda.log at the top of <output dir>; the fixture stays on the machine (it is made again, from
# the oracle's seed, whenever it is needed).
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/transformers-parity-cuda.test.ts
# Usage: scripts/device/transformers-parity.sh <prepared folder> <output dir>
set -uo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$1"
output="$2"
here="$(dirname "${BASH_SOURCE[0]}")"
mkdir -p "$output"
fixture="$(mktemp -d)"
status=0
python3 "$here/../../tools/oracle/qwen35_moe.py" "$fixture" cuda >"$output/oracle.log" 2>&1 || status=1
DRAMA3_TRANSFORMERS_FIXTURE="$fixture" bash "$here/run.sh" "$prepared" "$output/t" \
  test/kernels/transformers-parity-cuda.test.ts || status=1
cp "$output/t/transformers-parity-cuda.test.log" "$output/transformers-parity-cuda.log" 2>/dev/null
rm -rf "${output:?}/t" "$fixture"
exit "$status"
