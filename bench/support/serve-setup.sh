# Sourced by the serve comparisons (bench/gpu-serve-*.sh) with their two arguments: device-setup.sh's `prepared`,
# `output` and `node_binary`, then `checkpoint` (where the first run writes the full checkpoint and the later ones
# load it), the environment scripts/device/run.sh sets, and `serve NAME [ARGUMENT...]`: one run of the bench, logged
# to serve-NAME.log.
source "$(dirname "${BASH_SOURCE[0]}")/device-setup.sh"
export DRAMA3_KERNEL_DIR="$prepared/kernels" DRAMA3_WORKER_BUNDLES="$prepared/app/workers"
checkpoint="$(pwd)/.gpu-serve-checkpoint"
serve() {
  local name="$1"
  shift
  "$node_binary" "$prepared/app/bench/gpu-serve.mjs" "$output/$name" --preset full --checkpoint "$checkpoint" "$@" \
    >"$output/serve-$name.log" 2>&1
  echo "serve $name: exit $?"
}
