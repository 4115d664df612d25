#!/usr/bin/env bash
# The load's read length on this disk: the serve bench once (it writes the full checkpoint; 1 and 64 clients, 256
# frames a request), then the weights loaded alone (bench/gpu-load.ts --checkpoint, each load a fresh process with the
# shards evicted) with 16 MiB reads four at once into 64 MiB slots and with one 128 MiB read into each 128 MiB slot,
# alternating, three of each.
# Usage: bench/gpu-serve-read-lengths.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve shipped --clients 1,64 --frames 256 --requests 8 --compare served
short='streamed, 64 MiB slots, 16 MiB reads'
long='streamed, 128 MiB slots, 128 MiB reads'
"$node_binary" "$prepared/app/bench/gpu-load.mjs" "$output/load" --checkpoint "$checkpoint" \
  --loads "$short;$long;$short;$long;$short;$long" >"$output/load.log" 2>&1
echo "load: exit $?"
rm -rf "$checkpoint"
