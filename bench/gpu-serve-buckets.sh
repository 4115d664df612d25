#!/usr/bin/env bash
# The serve bench with the frame step recorded per batch bucket at plan time (a batch runs at the smallest bucket
# that holds it) and the scheduler's look-ahead, then without the look-ahead (DRAMA3_STEP_LOOKAHEAD=off), on one
# written full checkpoint.
# Usage: bench/gpu-serve-buckets.sh <prepared folder> <output dir>   (the folder from scripts/device/prepare.ts)
set -uo pipefail
source "$(dirname "$0")/support/serve-setup.sh"
serve buckets --clients 1,64 --frames 256 --requests 8 --compare served
DRAMA3_STEP_LOOKAHEAD=off serve plain --clients 64 --frames 256 --requests 8 --compare served
rm -rf "$checkpoint"
