#!/usr/bin/env bash
# The whole kernel contract as N processes at once on one GPU machine, one seed for all: each runs every N-th case
# (DRAMA3_CONTRACT_PART, test/kernels/support/contract-part.ts) and ends with its own SUMMARY line; together they are
# the whole contract. Its host references are most of its time, so N processes take about 1/N of it.
# Usage: scripts/device/contract-parts.sh <prepared folder> <output dir> [parts, default 6] [seed, default fresh]
set -uo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: $0 <prepared folder> <output dir> [parts] [seed]" >&2
  exit 2
fi
prepared="$1"
output="$2"
parts="${3:-6}"
seed="${4:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
here="$(dirname "${BASH_SOURCE[0]}")"
mkdir -p "$output"
echo "kernel contract in $parts parts, seed $seed"
for part in $(seq 0 $((parts - 1))); do
  DRAMA3_CONTRACT_SEED="$seed" DRAMA3_CONTRACT_PART="$part/$parts" \
    "$here/run.sh" "$prepared" "$output/part-$part" test/kernels/contract.test.ts >"$output/part-$part.txt" 2>&1 &
  # run.sh unpacks the carried files in place on its first run: let one do it before the next starts.
  sleep 3
done
wait
status=0
for part in $(seq 0 $((parts - 1))); do
  line="$(grep -h '^SUMMARY' "$output/part-$part.txt" | tail -1)"
  echo "${line:-part $part of $parts: no SUMMARY line (see $output/part-$part.txt)}"
  case "$line" in *" 0 fail;"*) ;; *) status=1 ;; esac
  caught="$(sed -n 's/.* \([0-9]*\) controls: \([0-9]*\) caught.*/\1 \2/p' <<<"$line")"
  read -r total found <<<"$caught"
  [ -n "$total" ] && [ "$total" = "$found" ] || status=1
done
exit $status
