#!/usr/bin/env bash
# The frame bench under several settings, one after another in one device call, every run's log appended to one
# file (<output dir>/frames-variants.log, each run headed by its name and settings) so that a comparison comes back
# whole. Each variant is one word: a name, then the environment settings it runs with.
# Usage: bench/gpu-frames-variants.sh <prepared folder> <output dir> "<name> [VAR=value ...]"...
# e.g.   bench/gpu-frames-variants.sh .carry/gpu OUT "level DRAMA3_TAIL_PRIORITY=level" "shipped" "level DRAMA3_TAIL_PRIORITY=level" "shipped"
set -uo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: $0 <prepared folder> <output dir> \"<name> [VAR=value ...]\"..." >&2
  exit 2
fi
prepared="$1"
output="$2"
shift 2
mkdir -p "$output"
combined="$output/frames-variants.log"
status=0
run=0
for variant in "$@"; do
  run=$((run + 1))
  read -r -a words <<<"$variant"
  name="${words[0]}"
  settings=("${words[@]:1}")
  folder="$output/run-$run-$name"
  echo "#### run $run: $name ${settings[*]}" | tee -a "$combined"
  env "${settings[@]}" bash "$(dirname "$0")/../scripts/device/run.sh" "$prepared" "$folder" bench/gpu-frames.ts || status=1
  cat "$folder/gpu-frames.log" >>"$combined"
  rm -rf "$folder"
done
exit "$status"
