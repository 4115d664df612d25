#!/usr/bin/env bash
# One device call that measures and checks the tree's frame step: the PyTorch baseline first when its wheels are
# carried (<prepared folder>/wheels/*.whl: fla-core and flash-linear-attention, bench/pytorch-frames.py), then the
# frame bench at batches DRAMA3_FRAMES_BATCHES (default 1 and 64) with the baseline beside it, then contracts 1 to 3
# on CUDA. Without a before folder the bench runs twice; with one or more (fatbins built from an earlier commit or
# another variant, carried inside the prepared folder, each named by its folder's name) it alternates them and this
# build in turn, twice each. The whole kernel contract takes a call of its own (scripts/device/contract-parts.sh
# .carry/gpu OUT 6). Leaves at the top of <output dir>: pytorch-frames.log (with wheels), variants.log,
# speech-model-contracts.log.
# DRAMA3_REQUIRE_GPU=<name part> (e.g. H200): on a machine whose first GPU's name lacks it, runs nothing, says so in
# card.log and exits 3, so a call lent another card than the one a figure is for costs seconds, not the whole run.
# Carry: DRAMA3_CARRY_ENTRIES=test/kernels/speech-model-contracts.test.ts,bench/gpu-frames.ts
# Usage: bench/gpu-verify.sh <prepared folder> <output dir> [before folder]...
set -uo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: $0 <prepared folder> <output dir> [before folder]..." >&2
  exit 2
fi
prepared="$1"
output="$2"
shift 2
here="$(dirname "${BASH_SOURCE[0]}")"
mkdir -p "$output"
if [ -n "${DRAMA3_REQUIRE_GPU:-}" ]; then
  card="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  if [[ "$card" != *"$DRAMA3_REQUIRE_GPU"* ]]; then
    echo "DRAMA3_REQUIRE_GPU=$DRAMA3_REQUIRE_GPU but this machine's GPU is '${card:-none}': nothing run" | tee "$output/card.log"
    exit 3
  fi
fi
status=0
export DRAMA3_FRAMES_BATCHES="${DRAMA3_FRAMES_BATCHES:-1,64}"

if compgen -G "$prepared/wheels/*.whl" >/dev/null; then
  packages="$(mktemp -d)"
  pip install --quiet --no-deps --no-index --target "$packages" "$prepared"/wheels/*.whl || status=1
  PYTHONPATH="$packages" python3 "$here/pytorch-frames.py" "$output/baseline" >"$output/pytorch-frames.log" 2>&1 ||
    status=1
  export DRAMA3_BASELINE_JSON="$output/baseline/pytorch-frames.json"
fi

if [ "$#" -gt 0 ]; then
  round=()
  for folder in "$@"; do round+=("$(basename "$folder") $folder"); done
  round+=("after")
  bash "$here/gpu-variants.sh" "$prepared" "$output/v" bench/gpu-frames.ts "${round[@]}" "${round[@]}" || status=1
else
  bash "$here/gpu-variants.sh" "$prepared" "$output/v" bench/gpu-frames.ts "default" "default" || status=1
fi
cp "$output/v/variants.log" "$output/variants.log" 2>/dev/null
rm -rf "${output:?}/v" "${output:?}/baseline"

bash "$here/../scripts/device/run.sh" "$prepared" "$output/s" test/kernels/speech-model-contracts.test.ts || status=1
cp "$output/s/speech-model-contracts.test.log" "$output/speech-model-contracts.log" 2>/dev/null
rm -rf "${output:?}/s"
exit "$status"
