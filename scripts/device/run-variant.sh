#!/usr/bin/env bash
# Runs entries as scripts/device/run.sh does, on a copy of a prepared folder whose kernels are replaced by the
# fatbins of a variant folder (another build of some kernel files): two builds measured, or their outputs' digests
# compared, in one device call.
# Usage: scripts/device/run-variant.sh <prepared folder> <variant folder of .fatbin files> <output dir> <entry>...
set -uo pipefail
if [ "$#" -lt 4 ]; then
  echo "usage: $0 <prepared folder> <variant folder> <output dir> <entry>..." >&2
  exit 2
fi
prepared="$1"
variant="$2"
output="$3"
shift 3
copy="$(mktemp -d)/prepared"
cp -r "$prepared" "$copy" || exit 1
cp "$variant"/*.fatbin "$copy/kernels/" || exit 1
echo "kernels replaced from $variant: $(cd "$variant" && ls ./*.fatbin | tr '\n' ' ')"
exec "$(dirname "$0")/run.sh" "$copy" "$output" "$@"
