#!/usr/bin/env bash
# The serve bench on one written full checkpoint with two prepared folders in turn: A (writes the checkpoint), then
# B (for example the previous commit's tree, prepared the same way), then A again, so that a change to a launcher and
# its kernel can be compared on the same machine. B needs only its app and kernels: Node and node_modules are taken
# from A where B lacks them. The later runs read the checkpoint with the page cache as the first left it, so their
# load times are not disk figures. Arguments after B's folder go to every run of the bench.
# Usage: bench/gpu-serve-two-trees.sh <prepared folder A> <output dir> <prepared folder B> [bench argument...]
set -uo pipefail
other="$(cd "${3:?a second prepared folder}" && pwd)"
bench_arguments=("${@:4}")
set -- "$1" "$2"
source "$(dirname "$0")/support/serve-setup.sh"
for shared in node_modules; do
  if [ ! -e "$other/$shared" ]; then cp -r "$prepared/$shared" "$other/"; fi
done
first="$prepared"
serve A --clients 1,64 "${bench_arguments[@]}"
use() {
  prepared="$1"
  export DRAMA3_KERNEL_DIR="$1/kernels" DRAMA3_WORKER_BUNDLES="$1/app/workers"
}
use "$other"
serve B --clients 1,64 "${bench_arguments[@]}"
use "$first"
serve A-again --clients 1,64 "${bench_arguments[@]}"
rm -rf "$checkpoint"
