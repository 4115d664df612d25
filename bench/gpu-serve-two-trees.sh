#!/usr/bin/env bash
# The serve bench on one written full checkpoint with two prepared folders in turn: A (writes the checkpoint), then
# B (for example the previous commit's tree, prepared the same way), then A again, so that a change to a launcher and
# its kernel can be compared on the same machine. B needs only its app and kernels (use_tree in serve-setup.sh). The
# later runs read the checkpoint with the page cache as the first left it, so their load times are not disk figures.
# Arguments after B's folder go to every run of the bench.
# Usage: bench/gpu-serve-two-trees.sh <prepared folder A> <output dir> <prepared folder B> [bench argument...]
set -uo pipefail
other="${3:?a second prepared folder}"
bench_arguments=("${@:4}")
set -- "$1" "$2"
source "$(dirname "$0")/support/serve-setup.sh"
serve A --clients 1,64 "${bench_arguments[@]}"
use_tree "$other"
serve B --clients 1,64 "${bench_arguments[@]}"
use_tree "$first_prepared"
serve A-again --clients 1,64 "${bench_arguments[@]}"
rm -rf "$checkpoint"
