// Which model geometries the CUDA kernels serve, decided from the config alone (no device needed), so that `auto`
// can fall back to the cpu backend with a stated reason and `--backend cuda` can refuse before loading any weight.
// Each limit is a kernel's: attention head dims are template instances, the delta rule keeps a 128 × 128 state per
// head on chip, the conv is specialised to 4 taps, expert widths follow the grouped GEMMs' warp layout
// (moe-geometry.ts), GEMMs read 8 bf16 at a time.

import { DIMENSION_RULES } from '../backend/cuda/moe-geometry.ts';
import type { Drama3Config } from '../model/config.ts';

const ATTENTION_HEAD_DIMS = [64, 128, 256];
const DELTA_NET_HEAD_DIM = 128;
const CONV_WIDTH = 4;
const MAX_EXPERTS = 256;
const MAX_TOP_K = 16;

/** The reasons the CUDA kernels cannot run this geometry (empty: they can). */
export function cudaGeometryRefusals(config: Drama3Config): string[] {
  const { text, tower } = config;
  const reasons: string[] = [];
  const require = (ok: boolean, reason: string) => {
    if (!ok) reasons.push(reason);
  };
  require(ATTENTION_HEAD_DIMS.includes(
    text.headDim,
  ), `backbone attention head dim ${text.headDim} is not 64, 128 or 256`);
  require(ATTENTION_HEAD_DIMS.includes(
    tower.headDim,
  ), `tower attention head dim ${tower.headDim} is not 64, 128 or 256`);
  require(text.linearKeyHeadDim === DELTA_NET_HEAD_DIM &&
    text.linearValueHeadDim ===
      DELTA_NET_HEAD_DIM, `DeltaNet head dims ${text.linearKeyHeadDim}/${text.linearValueHeadDim} are not ${DELTA_NET_HEAD_DIM}`);
  require(text.linearConvKernel === CONV_WIDTH, `DeltaNet conv kernel ${text.linearConvKernel} is not ${CONV_WIDTH}`);
  require(text.experts <= MAX_EXPERTS, `${text.experts} experts exceed ${MAX_EXPERTS}`);
  require(text.expertsPerToken <= MAX_TOP_K, `top-${text.expertsPerToken} routing exceeds top-${MAX_TOP_K}`);
  for (const [name, width] of [
    ['hidden size', text.hiddenSize],
    ['tower hidden size', tower.hiddenSize],
    ['expert intermediate size', text.expertIntermediate],
    ['shared expert intermediate size', text.sharedExpertIntermediate],
    ['tower intermediate size', tower.intermediate],
  ] as const) {
    require(width % 8 === 0, `${name} ${width} is not a multiple of 8`);
  }
  const format = config.quantization === undefined ? 'bf16' : 'fp8';
  const rule = DIMENSION_RULES[format];
  for (const [name, width] of [
    ['hidden size', text.hiddenSize],
    ['expert intermediate size', text.expertIntermediate],
  ] as const) {
    const fits = width % rule.multiple === 0 && width <= rule.maximum;
    require(fits, `${format} experts need the ${name} to be a multiple of ${rule.multiple} up to ${rule.maximum}, got ${width}`);
  }
  return reasons;
}
