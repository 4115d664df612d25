#!/usr/bin/env bash
# The serve bench on one written full checkpoint with short and with longer requests: as shipped at 1 and 64 clients
# with the bench's 64 frames a request (this run writes the checkpoint and times its load from disk), then 64 clients
# at 256 frames a request, where each request's prefill and the codec's last groups weigh less against its steps. The
# second run reads the checkpoint with the page cache as the first left it, so its load time is not a disk figure.
# Usage: bench/gpu-serve-lengths.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve short --clients 1,64 --requests 8
serve long --clients 1,64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
