#!/usr/bin/env bash
# One GPU entry (a bench or a test) under several variants, one run each in one device call, every run's log appended
# to <output dir>/variants.log under a line naming the variant. A variant is one word: a name, then any of
#   VAR=value          a setting the run gets (e.g. DRAMA3_TAIL_PRIORITY=level)
#   <folder>           fatbins put in place of their namesakes among the prepared kernels (built from an earlier
#                      commit with npx tsx scripts/build-kernels.ts --at <commit> --out .carry/gpu/before --only gemm,
#                      and carried inside the prepared folder); where the folder holds an app/ (the bundles of an
#                      earlier commit, made by scripts/device/prepare.ts in a worktree of it), the run uses those
#                      bundles too: a change to a launcher beside its kernel
# Settings given to this script (e.g. DRAMA3_FRAMES_BATCHES) pass through to every run. With DRAMA3_BASELINE_JSON set
# to a pytorch-frames.json (bench/pytorch-frames.py), each run finds a copy in its output folder, so the frame bench
# prints the baseline beside its own figures.
# Usage: bench/gpu-variants.sh <prepared folder> <output dir> <entry> "<name> [folder] [VAR=value ...]"...
# e.g.   bench/gpu-variants.sh .carry/gpu OUT bench/gpu-frames.ts "before .carry/gpu/before" "after" "level DRAMA3_TAIL_PRIORITY=level"
set -uo pipefail
if [ "$#" -lt 4 ]; then
  echo "usage: $0 <prepared folder> <output dir> <entry> \"<name> [folder] [VAR=value ...]\"..." >&2
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
  read -r -a words <<<"$variant"
  name="${words[0]}"
  settings=()
  folder=""
  for word in "${words[@]:1}"; do
    if [[ "$word" == *=* ]]; then settings+=("$word"); else folder="$word"; fi
  done
  # run.sh takes its kernels from the prepared folder: a variant with fatbins runs from a folder of links to the
  # prepared entries, with its own kernels folder (a copy of the prepared kernels, the variant's fatbins in place).
  variant_prepared="$prepared"
  swapped=""
  if [ -n "$folder" ]; then
    kernels="$(mktemp -d)"
    cp "$prepared"/kernels/* "$kernels"/ && cp "$folder"/*.fatbin "$kernels"/ || exit 1
    variant_prepared="$(mktemp -d)"
    for item in "$prepared"/*; do ln -s "$item" "$variant_prepared/$(basename "$item")"; done
    rm "$variant_prepared/kernels" && ln -s "$kernels" "$variant_prepared/kernels"
    swapped="(fatbins in place: $(cd "$folder" && echo *.fatbin))"
    if [ -d "$folder/app" ]; then
      rm "$variant_prepared/app" && ln -s "$(cd "$folder/app" && pwd)" "$variant_prepared/app"
      swapped="$swapped (bundles: $folder/app)"
    fi
  fi
  echo "#### run $run: $name ${settings[*]} $folder $swapped" >>"$output/variants.log"
  mkdir -p "$output/run-$run"
  if [ -n "${DRAMA3_BASELINE_JSON:-}" ] && [ -f "$DRAMA3_BASELINE_JSON" ]; then
    cp "$DRAMA3_BASELINE_JSON" "$output/run-$run/pytorch-frames.json"
  fi
  env "${settings[@]}" bash "$here/../scripts/device/run.sh" "$variant_prepared" "$output/run-$run" "$entry" \
    >/dev/null 2>&1 || status=1
  cat "$output/run-$run/$log" >>"$output/variants.log" 2>/dev/null
  rm -rf "${output:?}/run-$run"
done
exit "$status"
