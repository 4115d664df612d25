# Sourced by the serve comparisons (bench/gpu-serve-*.sh) with their two arguments: device-setup.sh's `prepared`,
# `output` and `node_binary`, then `checkpoint` (where the first run writes the full checkpoint and the later ones
# load it), the environment scripts/device/run.sh sets, `serve NAME [ARGUMENT...]`: one run of the bench, logged
# to serve-NAME.log, and `use_tree FOLDER` (below).
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

# use_tree FOLDER: the serve runs after it take their app and kernels from FOLDER (another prepared tree, for example
# the previous commit's); its node_modules and kernels are taken from the first folder where it has none.
first_prepared="$prepared"
use_tree() {
  local folder
  folder="$(cd "$1" && pwd)"
  for shared in node_modules kernels; do
    if [ ! -e "$folder/$shared" ]; then cp -r "$first_prepared/$shared" "$folder/"; fi
  done
  prepared="$folder"
  export DRAMA3_KERNEL_DIR="$folder/kernels" DRAMA3_WORKER_BUNDLES="$folder/app/workers"
}
