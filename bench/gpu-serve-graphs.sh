#!/usr/bin/env bash
# The serve bench on one written full checkpoint, 1 and 64 clients at 256 frames a request: as shipped (a batch
# size's step graph recorded on its third call, the first two run directly), then recorded on the first call
# (DRAMA3_STEP_GRAPH_RECORD_AFTER=1, as before). Its round table splits each step-only round into the model's step
# and the host's rest, and counts the step graphs recorded. The second run reads the checkpoint with the page cache
# as the first left it (O_DIRECT reads bypass it), so its load time is a disk figure too.
# Usage: bench/gpu-serve-graphs.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve third --clients 1,64 --frames 256 --requests 8 --compare served
DRAMA3_STEP_GRAPH_RECORD_AFTER=1 serve first --clients 1,64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
