#!/usr/bin/env bash
# One GPU entry (a bench or a test) under several builds of the kernels, one run per variant in one device call,
# every run's log appended to <output dir>/kernel-variants.log. A variant is "<name>" (the prepared kernels) or
# "<name> <folder of fatbins>": the prepared kernels with each fatbin of that folder in place of its namesake (built
# here from another commit, e.g. npx tsx scripts/build-kernels.ts --at <commit> --out .carry/gpu/before --only gemm,
# and carried inside the prepared folder). Settings such as DRAMA3_FRAMES_BATCHES pass through to every run.
# Usage: bench/gpu-kernel-variants.sh <prepared folder> <output dir> <entry> "<name> [folder]"...
# e.g.   bench/gpu-kernel-variants.sh .carry/gpu OUT bench/gpu-frames.ts "before .carry/gpu/before" "after" "before .carry/gpu/before" "after"
set -uo pipefail
if [ "$#" -lt 4 ]; then
  echo "usage: $0 <prepared folder> <output dir> <entry> \"<name> [folder]\"..." >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
output="$2"
entry="$3"
shift 3
here="$(dirname "${BASH_SOURCE[0]}")"
mkdir -p "$output"
log="$(basename "${entry%.ts}").log"
status=0
run=0
for variant in "$@"; do
  run=$((run + 1))
  read -r name folder <<<"$variant"
  # run.sh takes its kernels from the prepared folder: a variant runs from a folder of links to its entries, with
  # its own kernels folder (a copy of the prepared kernels, the variant's fatbins in place).
  variant_prepared="$prepared"
  if [ -n "${folder:-}" ]; then
    kernels="$(mktemp -d)"
    cp "$prepared"/kernels/* "$kernels"/ && cp "$folder"/*.fatbin "$kernels"/ || exit 1
    variant_prepared="$(mktemp -d)"
    for item in "$prepared"/*; do ln -s "$item" "$variant_prepared/$(basename "$item")"; done
    rm "$variant_prepared/kernels" && ln -s "$kernels" "$variant_prepared/kernels"
  fi
  swapped=""
  [ -n "${folder:-}" ] && swapped="(in place: $(cd "$folder" && echo *.fatbin))"
  echo "#### run $run: $name ${folder:-} $swapped" >>"$output/kernel-variants.log"
  bash "$here/../scripts/device/run.sh" "$variant_prepared" "$output/run-$run" "$entry" >/dev/null 2>&1 || status=1
  cat "$output/run-$run/$log" >>"$output/kernel-variants.log" 2>/dev/null
  rm -rf "${output:?}/run-$run"
done
exit "$status"
