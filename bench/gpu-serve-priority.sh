#!/usr/bin/env bash
# The serve bench three ways on one written full checkpoint: as shipped (the step's streams at high priority), with
# the step's streams at the default priority (DRAMA3_STEP_PRIORITY=normal), and with clients that each send 3
# requests in turn (lanes that come and go, not one burst). Only the first run writes the checkpoint; the later ones
# read it with the page cache as the first left it, so their load times are not disk figures.
# Usage: bench/gpu-serve-priority.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
prepared="$(cd "$1" && pwd)"
mkdir -p "$2"
output="$(cd "$2" && pwd)"
node_binary="$(mktemp -d)/node"
xz -dc "$prepared/node.xz" >"$node_binary" && chmod +x "$node_binary" || exit 1
export DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_WORKER_BUNDLES="$prepared/app/workers"
checkpoint="$(pwd)/.gpu-serve-checkpoint"
serve() {
  local name="$1"
  shift
  "$node_binary" "$prepared/app/bench/gpu-serve.mjs" "$output/$name" --preset full --checkpoint "$checkpoint" "$@" \
    >"$output/serve-$name.log" 2>&1
  echo "serve $name: exit $?"
}
serve high
DRAMA3_STEP_PRIORITY=normal serve normal --clients 1,64 --requests 8 --compare served
serve steady --clients 1,64 --per-client 3 --requests 8 --compare served
rm -rf "$checkpoint"
