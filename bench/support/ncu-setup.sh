# Sourced by the Nsight Compute scripts (bench/ncu-*.sh) with their two arguments: checks them, sets `prepared` (the
# folder from scripts/device/prepare.ts), `output` (created), `ncu` and `node_binary` (Node unpacked from the folder),
# and exits 0 saying so, in "$output/$log_name", where the machine has no ncu.
if [ "$#" -ne 2 ]; then
  echo "usage: $0 <prepared folder> <output dir>" >&2
  exit 2
fi
prepared="$(cd "$1" && pwd)"
mkdir -p "$2"
output="$(cd "$2" && pwd)"
ncu="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
if [ -z "$ncu" ]; then
  echo "$(basename "$0" .sh): no Nsight Compute (ncu) on this machine" | tee "$output/$log_name"
  exit 0
fi
node_binary="$(mktemp -d)/node"
xz -dc "$prepared/node.xz" >"$node_binary" && chmod +x "$node_binary" || exit 1
