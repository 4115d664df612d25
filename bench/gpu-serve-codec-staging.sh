#!/usr/bin/env bash
# The serve bench at 1 and 64 clients on one written full checkpoint, twice: as shipped (the codec's tensor-core convs
# read their inputs staged once a layer, short lanes tiled flat) and with each block staging its own inputs
# (DRAMA3_CODEC_STAGED=off). The second run reads the checkpoint with the page cache as the first left it, so its
# load time is not a disk figure.
# Usage: bench/gpu-serve-codec-staging.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
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
  "$node_binary" "$prepared/app/bench/gpu-serve.mjs" "$output/$name" --preset full --checkpoint "$checkpoint" \
    --clients 1,64 --requests 8 "$@" >"$output/serve-$name.log" 2>&1
  echo "serve $name: exit $?"
}
serve staged
DRAMA3_CODEC_STAGED=off serve unstaged
rm -rf "$checkpoint"
