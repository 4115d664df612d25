#!/usr/bin/env bash
# The serve bench three ways on one written full checkpoint: as shipped (the step's streams at high priority), with
# the step's streams at the default priority (DRAMA3_STEP_PRIORITY=normal), and with clients that each send 3
# requests in turn (lanes that come and go, not one burst). Only the first run writes the checkpoint; the later ones
# read it with the page cache as the first left it, so their load times are not disk figures.
# Usage: bench/gpu-serve-priority.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve high
DRAMA3_STEP_PRIORITY=normal serve normal --clients 1,64 --requests 8 --compare served
serve steady --clients 1,64 --per-client 3 --requests 8 --compare served
rm -rf "$checkpoint"
