#!/usr/bin/env bash
# The disk's own read rate by block length and readers at once: O_DIRECT reads (dd) of an 8 GiB file of random bytes
# written in the working directory, the page cache dropped before each pass (needs root). Prints one line a pass.
# Usage: bench/disk-read.sh   (on the GPU machine; about a minute)
set -u
file="$(pwd)/.disk-read-test"
trap 'rm -f "$file"' EXIT
head -c 512M /dev/urandom >/tmp/disk-read-block
started=$(date +%s.%N)
for _ in $(seq 16); do cat /tmp/disk-read-block; done >"$file"
sync
rm -f /tmp/disk-read-block
echo "wrote 8 GiB in $(awk "BEGIN{print $(date +%s.%N) - $started}") s"
pass() { # readers, block MiB
  local readers=$1 block=$2
  sync
  echo 3 >/proc/sys/vm/drop_caches
  local each=$((8192 / readers / block)) from
  from=$(date +%s.%N)
  for reader in $(seq 0 $((readers - 1))); do
    dd if="$file" of=/dev/null bs="${block}M" iflag=direct skip=$((reader * each)) count="$each" status=none &
  done
  wait
  echo "readers $readers, blocks of $block MiB: $(awk "BEGIN{printf \"%.2f\", 8.589934592 / ($(date +%s.%N) - $from)}") GB/s"
}
for spec in "1 16" "1 64" "2 16" "4 16" "8 16" "16 16" "4 64" "8 4" "16 4" "1 16" "8 16"; do pass $spec; done
