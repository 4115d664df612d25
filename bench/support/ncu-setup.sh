# Sourced by the Nsight Compute scripts (bench/ncu-*.sh) with their two arguments: device-setup.sh's `prepared`,
# `output` and `node_binary`, then `ncu`; exits 0 saying so, in "$output/$log_name", where the machine has no ncu.
source "$(dirname "${BASH_SOURCE[0]}")/device-setup.sh"
ncu="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
if [ -z "$ncu" ]; then
  echo "$(basename "$0" .sh): no Nsight Compute (ncu) on this machine" | tee "$output/$log_name"
  exit 0
fi
