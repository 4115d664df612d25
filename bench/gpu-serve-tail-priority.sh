#!/usr/bin/env bash
# The serve bench twice on one written full checkpoint: as shipped (a step of up to 16 lanes runs its tail a priority
# below its head) and with every tail at the step's priority (DRAMA3_TAIL_PRIORITY=level). Only the first run writes
# the checkpoint; the second reads it with the page cache as the first left it, so its load time is not a disk figure.
# Usage: bench/gpu-serve-tail-priority.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve below --clients 1,64 --frames 256 --requests 8 --compare served
DRAMA3_TAIL_PRIORITY=level serve level --clients 1,64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
