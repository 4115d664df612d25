#!/usr/bin/env bash
# The serve bench at 1 and 64 clients on one written full checkpoint, twice: as shipped (the codec's tensor-core convs
# read their inputs staged once a layer, short lanes tiled flat) and with each block staging its own inputs
# (DRAMA3_CODEC_STAGED=off). The second run reads the checkpoint with the page cache as the first left it, so its
# load time is not a disk figure.
# Usage: bench/gpu-serve-codec-staging.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve staged --clients 1,64 --requests 8
DRAMA3_CODEC_STAGED=off serve unstaged --clients 1,64 --requests 8
rm -rf "$checkpoint"
