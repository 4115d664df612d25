#!/usr/bin/env bash
# The serve bench at 1 and 64 clients on one written full checkpoint, twice: with the prepared kernels, then with the
# kernel files of a baseline folder put in their place (for example the previous commit's codec_conv.fatbin; files
# ending in .xz are decompressed first). The second run reads the checkpoint with the page cache as the first left
# it, so its load time is not a disk figure. Arguments after the baseline folder go to both runs of the bench.
# Usage: bench/gpu-serve-baseline-kernels.sh <prepared folder> <output dir> <baseline kernel folder> [bench argument...]
set -uo pipefail
baseline_files="$(cd "${3:?a baseline kernel folder}" && pwd)"
bench_arguments=("${@:4}")
set -- "$1" "$2"
source "$(dirname "$0")/support/serve-setup.sh"
serve shipped --clients 1,64 --requests 8 "${bench_arguments[@]}"
baseline="$(mktemp -d)"
cp "$prepared"/kernels/*.fatbin "$baseline"/
for file in "$baseline_files"/*; do
  case "$file" in
    *.xz) xz -dc "$file" >"$baseline/$(basename "${file%.xz}")" ;;
    *) cp "$file" "$baseline"/ ;;
  esac
done
DRAMA3_KERNEL_DIR="$baseline" serve baseline --clients 1,64 --requests 8 "${bench_arguments[@]}"
rm -rf "$checkpoint" "$baseline"
