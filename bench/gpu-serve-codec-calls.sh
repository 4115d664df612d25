#!/usr/bin/env bash
# The serve bench at 64 clients with the codec decoding at most 256 frames a launch sequence (the default) and at
# most 1024 (DRAMA3_CODEC_FRAMES_PER_CALL=1024: the 64 lanes' 16-frame groups that fall due together in one call), on
# one written full checkpoint.
# Usage: bench/gpu-serve-codec-calls.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve calls256 --clients 64 --frames 256 --requests 8 --compare served
DRAMA3_CODEC_FRAMES_PER_CALL=1024 serve calls1024 --clients 64 --frames 256 --requests 8 --compare served
serve calls256-again --clients 64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
