// The sparse MoE block's geometry as the cuda kernels see it, read from the weights' shapes and dtypes alone, with a
// named refusal for whatever the kernels cannot serve: at most 256 experts and top-16; FP8 experts need hidden and
// intermediate in 512, 1024, 1536 or 2048 (four warps of 128-column blocks), bf16 experts multiples of 256 up to 2048;
// every expert the same dtype and shape, e4m3 ones with their f32 128×128 block scales.
import { DramaError } from '../../errors.ts';
import type { LinearWeight, MoeWeights, SwiGluWeights } from '../types.ts';
import { MOE_MAX_EXPERTS, MOE_MAX_TOP_K } from './ops/moe.ts';
import { type CudaBuffer, shapeElements } from './tensors.ts';

export type MoeExpertFormat = 'fp8' | 'bf16';

export interface MoeGeometry {
  readonly experts: number;
  readonly topK: number;
  readonly hidden: number;
  readonly intermediate: number;
  readonly format: MoeExpertFormat;
}

/** Multiple and maximum of hidden and intermediate per expert format (kernels/cuda/moe_fp8.cu, moe_bf16.cu). */
const DIMENSION_RULES: Record<MoeExpertFormat, { multiple: number; maximum: number }> = {
  fp8: { multiple: 512, maximum: 2048 },
  bf16: { multiple: 256, maximum: 2048 },
};

function refuse(message: string): never {
  throw new DramaError('MOE_GEOMETRY_UNSUPPORTED', message, { kind: 'bad_checkpoint' });
}

function sameShape(shape: readonly number[], expected: readonly number[]): boolean {
  return shape.length === expected.length && shape.every((size, index) => size === expected[index]);
}

function requireWeight(weight: LinearWeight<CudaBuffer>, shape: readonly number[], name: string): void {
  if (!sameShape(weight.shape, shape)) refuse(`${name} is [${weight.shape}], expected [${shape}]`);
  if (weight.data.elements < shapeElements(shape)) {
    refuse(`${name} holds ${weight.data.elements} elements, its shape [${shape}] needs ${shapeElements(shape)}`);
  }
}

function requireScales(weight: LinearWeight<CudaBuffer>, name: string): void {
  const [outFeatures, inFeatures] = weight.shape as [number, number];
  const shape = [Math.ceil(outFeatures / 128), Math.ceil(inFeatures / 128)];
  const scales = weight.scales;
  if (scales === undefined) refuse(`${name} is e4m3 without its block scales`);
  if (scales.dtype !== 'f32' || scales.data.dtype !== 'f32') refuse(`${name} scales must be f32, got ${scales.dtype}`);
  requireWeight(scales, shape, `${name} scales`);
}

function requireDimension(value: number, name: string, format: MoeExpertFormat): void {
  const { multiple, maximum } = DIMENSION_RULES[format];
  if (!Number.isInteger(value) || value < multiple || value > maximum || value % multiple !== 0) {
    refuse(`${format} experts need ${name} a multiple of ${multiple} up to ${maximum}, got ${value}`);
  }
}

function requireExpert(expert: SwiGluWeights<CudaBuffer>, geometry: MoeGeometry, index: number): void {
  const { hidden, intermediate, format } = geometry;
  const dtype = format === 'fp8' ? 'e4m3' : 'bf16';
  for (const [name, weight, shape] of [
    ['gate', expert.gate, [intermediate, hidden]],
    ['up', expert.up, [intermediate, hidden]],
    ['down', expert.down, [hidden, intermediate]],
  ] as const) {
    const label = `expert ${index} ${name}`;
    if (weight.dtype !== dtype || weight.data.dtype !== dtype) {
      refuse(`${label} is ${weight.dtype}, the experts are ${dtype} (every expert must share one dtype)`);
    }
    requireWeight(weight, shape, label);
    if (format === 'fp8') requireScales(weight, label);
  }
}

/** The block's geometry, or a MOE_GEOMETRY_UNSUPPORTED error naming what the kernels cannot serve. */
export function moeGeometry(weights: MoeWeights<CudaBuffer>): MoeGeometry {
  const { router, experts: list, topK } = weights;
  if (router.shape.length !== 2) refuse(`router is [${router.shape}], expected [experts, hidden]`);
  const [experts, hidden] = router.shape as [number, number];
  if (experts !== list.length) refuse(`router has ${experts} rows but there are ${list.length} experts`);
  if (experts < 1 || experts > MOE_MAX_EXPERTS) refuse(`${experts} experts: the kernels take 1 to ${MOE_MAX_EXPERTS}`);
  const maxTopK = Math.min(MOE_MAX_TOP_K, experts);
  if (!Number.isInteger(topK) || topK < 1 || topK > maxTopK) refuse(`top-${topK}: the kernels take 1 to ${maxTopK}`);
  const first = list[0]!;
  const format: MoeExpertFormat | undefined =
    first.gate.dtype === 'e4m3' ? 'fp8' : first.gate.dtype === 'bf16' ? 'bf16' : undefined;
  if (format === undefined) refuse(`experts are ${first.gate.dtype}: the kernels take e4m3 (block-scaled) or bf16`);
  const intermediate = first.gate.shape[0]!;
  requireDimension(hidden, 'hidden', format);
  requireDimension(intermediate, 'intermediate', format);
  const geometry: MoeGeometry = { experts, topK, hidden, intermediate, format };
  for (const [index, expert] of list.entries()) requireExpert(expert, geometry, index);
  const sharedWidth = swiGluWidth(weights.shared, 'shared expert');
  requireWeight(weights.shared.gate, [sharedWidth, hidden], 'shared expert gate_proj');
  requireWeight(weights.shared.down, [hidden, sharedWidth], 'shared expert down_proj');
  requireWeight(weights.sharedGate, [1, hidden], 'shared expert gate');
  return geometry;
}

/** Checks a SwiGLU MLP's shapes: gate and up [width, hidden], down [outputs, width]. */
export function swiGluWidth(weights: SwiGluWeights<CudaBuffer>, name: string): number {
  const { gate, up, down } = weights;
  if (gate.shape.length !== 2) refuse(`${name} gate is [${gate.shape}], expected [width, hidden]`);
  const [width, hidden] = gate.shape as [number, number];
  if (!sameShape(up.shape, gate.shape)) refuse(`${name} up is [${up.shape}], gate is [${gate.shape}]`);
  if (down.shape.length !== 2 || down.shape[1] !== width) refuse(`${name} down is [${down.shape}], width ${width}`);
  if (hidden < 1 || width < 1) refuse(`${name} has an empty projection [${gate.shape}]`);
  return width;
}
