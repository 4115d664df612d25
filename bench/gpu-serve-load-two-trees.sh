#!/usr/bin/env bash
# The time to ready of two prepared trees on one machine: A (writes the full checkpoint and runs the whole serve bench
# at 1 and 64 clients, 256 frames a request), then B, A and B again with a short bench (the loads are what is
# compared; every load a fresh process reading O_DIRECT). B needs only its app: Node, node_modules and the kernels are
# taken from A where B lacks them.
# Usage: bench/gpu-serve-load-two-trees.sh <prepared folder A> <output dir> <prepared folder B>
set -uo pipefail
other="$(cd "${3:?a second prepared folder}" && pwd)"
set -- "$1" "$2"
source "$(dirname "$0")/support/serve-setup.sh"
for shared in node.xz node_modules kernels; do
  if [ ! -e "$other/$shared" ]; then cp -r "$prepared/$shared" "$other/"; fi
done
first="$prepared"
use() {
  prepared="$1"
  export DRAMA3_KERNEL_DIR="$1/kernels" DRAMA3_WORKER_BUNDLES="$1/app/workers"
}
short=(--clients 1,64 --requests 2 --frames 8 --compare served)
serve A1 --clients 1,64 --frames 256 --requests 8 --compare served
use "$other"
serve B1 "${short[@]}"
use "$first"
serve A2 "${short[@]}"
use "$other"
serve B2 "${short[@]}"
rm -rf "$checkpoint"
