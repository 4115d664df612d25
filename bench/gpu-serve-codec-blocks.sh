#!/usr/bin/env bash
# The serve bench on one written full checkpoint with the tensor-core conv's blocks capped at several counts
# (DRAMA3_CODEC_RESIDENT_BLOCKS): as shipped (a block per row tile), then 264, 132 and 66 blocks a launch, so that the
# codec decoding beside the frame step leaves room on the SMs for the step's kernels. 64 clients, 64 frames a request.
# Only the first run writes the checkpoint; the later ones read it with the page cache as the first left it, so their
# load times are not disk figures.
# Usage: bench/gpu-serve-codec-blocks.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve shipped --clients 64 --requests 8
for blocks in 264 132 66; do
  DRAMA3_CODEC_RESIDENT_BLOCKS=$blocks serve "blocks$blocks" --clients 64 --requests 8
done
rm -rf "$checkpoint"
