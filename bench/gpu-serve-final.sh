#!/usr/bin/env bash
# The serve bench as shipped (1 and 64 clients, 256 frames a request, 8 replies compared with the same request served
# alone), on a freshly written full checkpoint.
# Usage: bench/gpu-serve-final.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve shipped --clients 1,64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
