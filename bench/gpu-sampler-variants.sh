#!/usr/bin/env bash
# The sampler bench (bench/gpu-sampler.ts) with the sampler's fatbin swapped, one run per variant in one device call,
# every run's table appended to <output dir>/sampler-variants.log. A variant is "<name>" (the prepared kernels) or
# "<name> <folder holding a sampler.fatbin>" (built here from another commit's kernels/cuda/sampler.cu with
# scripts/build-kernels.ts's flags, and carried inside the prepared folder).
# Usage: bench/gpu-sampler-variants.sh <prepared folder> <output dir> "<name> [folder]"...
set -uo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: $0 <prepared folder> <output dir> \"<name> [folder]\"..." >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
output="$2"
shift 2
here="$(dirname "${BASH_SOURCE[0]}")"
mkdir -p "$output"
status=0
for variant in "$@"; do
  read -r name folder <<<"$variant"
  kernels="$prepared/kernels"
  if [ -n "${folder:-}" ]; then
    # A copy of the prepared kernels with this variant's sampler in place.
    kernels="$(mktemp -d)"
    cp "$prepared"/kernels/* "$kernels"/ && cp "$folder/sampler.fatbin" "$kernels/sampler.fatbin" || exit 1
  fi
  echo "#### $name ${folder:-}" >>"$output/sampler-variants.log"
  # run.sh takes its kernels from the prepared folder: a variant runs from a folder of links to its entries, the
  # kernels swapped.
  variant_prepared="$prepared"
  if [ "$kernels" != "$prepared/kernels" ]; then
    variant_prepared="$(mktemp -d)"
    for entry in "$prepared"/*; do ln -s "$entry" "$variant_prepared/$(basename "$entry")"; done
    rm "$variant_prepared/kernels" && ln -s "$kernels" "$variant_prepared/kernels"
  fi
  bash "$here/../scripts/device/run.sh" "$variant_prepared" "$output/$name" bench/gpu-sampler.ts >/dev/null 2>&1 || status=1
  cat "$output/$name/gpu-sampler.log" >>"$output/sampler-variants.log" 2>/dev/null
  rm -rf "${output:?}/$name"
done
exit "$status"
