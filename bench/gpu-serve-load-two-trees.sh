#!/usr/bin/env bash
# The time to ready of two prepared trees on one machine: A (writes the full checkpoint and runs the whole serve bench
# at 1 and 64 clients, 256 frames a request), then B, and A and B in turn again, with a short bench (the loads are
# what is compared; every load a fresh process reading O_DIRECT). B needs only its app (use_tree in serve-setup.sh).
# Usage: bench/gpu-serve-load-two-trees.sh <prepared folder A> <output dir> <prepared folder B> [loads of each, 2]
set -uo pipefail
other="${3:?a second prepared folder}"
loads="${4:-2}"
set -- "$1" "$2"
source "$(dirname "$0")/support/serve-setup.sh"
short=(--clients 1,64 --requests 2 --frames 8 --compare served)
serve A1 --clients 1,64 --frames 256 --requests 8 --compare served
use_tree "$other"
serve B1 "${short[@]}"
for ((load = 2; load <= loads; load++)); do
  use_tree "$first_prepared"
  serve "A$load" "${short[@]}"
  use_tree "$other"
  serve "B$load" "${short[@]}"
done
rm -rf "$checkpoint"
