// The routed experts in the grouped GEMMs' packed layout (./moeWeights.ts), made on the device from the per-expert
// tensors the loader placed there: per expert one re-layout launch for gate|up, one for down (kernels/cuda/
// moe_pack.cu) and plain copies of the block scales, all queued on the stream with no host round trip. The packed
// buffers live as long as the weights object; the per-expert tensors are freed once packed (BlockContext.releaseWeights),
// so the experts are held twice only while one block is being packed.
import type { MoeWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { Allocation } from './memory.ts';
import type { MoeGeometry } from './moe-geometry.ts';
import type { MoeBf16Weights, MoeFp8Weights } from './ops/moe.ts';
import { moePackRows } from './ops/moePack.ts';
import type { CudaBuffer } from './tensors.ts';

export type PackedExperts =
  | { readonly format: 'fp8'; readonly weights: MoeFp8Weights; readonly allocations: readonly Allocation[] }
  | { readonly format: 'bf16'; readonly weights: MoeBf16Weights; readonly allocations: readonly Allocation[] };

/** Bytes of each packed buffer for a geometry (the sizes plan allocates once per MoE block). */
export function packedExpertBytes(g: MoeGeometry): Record<string, number> {
  const element = g.format === 'fp8' ? 1 : 2;
  const sizes: Record<string, number> = {
    gateUp: g.experts * 2 * g.intermediate * g.hidden * element,
    down: g.experts * g.hidden * g.intermediate * element,
  };
  if (g.format === 'fp8') {
    const blocks = (g.intermediate / 128) * (g.hidden / 128);
    sizes.gateUpScales = g.experts * 2 * blocks * 4;
    sizes.downScales = g.experts * blocks * 4;
  }
  return sizes;
}

function allocateAll(ctx: BlockContext, sizes: Record<string, number>, format: string): Map<string, Allocation> {
  const held = new Map<string, Allocation>();
  try {
    for (const [name, bytes] of Object.entries(sizes)) {
      held.set(name, ctx.cuda.allocate(bytes, `moe experts ${name} (${format})`));
      ctx.countAllocation();
    }
  } catch (error) {
    // A refused allocation leaves nothing behind.
    for (const allocation of held.values()) allocation.free();
    throw error;
  }
  return held;
}

/** Packs every expert of `weights` (checked by moeGeometry) into fresh device buffers. */
export function packExperts(ctx: BlockContext, weights: MoeWeights<CudaBuffer>, g: MoeGeometry): PackedExperts {
  const held = allocateAll(ctx, packedExpertBytes(g), g.format);
  const pointer = (name: string) => held.get(name)!.pointer;
  const element = g.format === 'fp8' ? 1 : 2;
  const gateUpStride = BigInt(2 * g.intermediate * g.hidden * element);
  const downStride = BigInt(g.hidden * g.intermediate * element);
  const scaleBlocks = (g.intermediate / 128) * (g.hidden / 128);
  const scaleBytes = BigInt(scaleBlocks * 4);
  const { driver, stream } = ctx.cuda;
  const packOne = (expert: MoeWeights<CudaBuffer>['experts'][number], index: number): void => {
    const e = BigInt(index);
    moePackRows(ctx.cuda, {
      target: pointer('gateUp') + e * gateUpStride,
      first: expert.gate.data.pointer,
      second: expert.up.data.pointer,
      rowBytes: g.hidden * element,
      groups: (2 * g.intermediate) / 16,
      interleaved: true,
    });
    moePackRows(ctx.cuda, {
      target: pointer('down') + e * downStride,
      first: expert.down.data.pointer,
      rowBytes: g.intermediate * element,
      groups: g.hidden / 16,
      interleaved: false,
    });
    if (g.format !== 'fp8') return;
    // Scales as shipped: the gate's rows then the up's; down's unchanged.
    const gateUpScales = pointer('gateUpScales') + 2n * e * scaleBytes;
    driver.copyDeviceToDevice(gateUpScales, expert.gate.scales!.data.pointer, scaleBlocks * 4, stream);
    driver.copyDeviceToDevice(gateUpScales + scaleBytes, expert.up.scales!.data.pointer, scaleBlocks * 4, stream);
    const downScales = pointer('downScales') + e * scaleBytes;
    driver.copyDeviceToDevice(downScales, expert.down.scales!.data.pointer, scaleBlocks * 4, stream);
  };
  try {
    weights.experts.forEach(packOne);
  } catch (error) {
    // Work already queued may still write the buffers: let it finish, then give them back.
    ctx.cuda.synchronize();
    for (const allocation of held.values()) allocation.free();
    throw error;
  }
  // The packed copy replaces the per-expert tensors: free them, so the experts are not held twice.
  ctx.releaseWeights(weights.experts.flatMap((expert) => [expert.gate, expert.up, expert.down]));
  const allocations = [...held.values()];
  if (g.format === 'fp8') {
    const packed: MoeFp8Weights = {
      gateUp: pointer('gateUp'),
      gateUpScales: pointer('gateUpScales'),
      down: pointer('down'),
      downScales: pointer('downScales'),
    };
    return { format: 'fp8', weights: packed, allocations };
  }
  return { format: 'bf16', weights: { gateUp: pointer('gateUp'), down: pointer('down') }, allocations };
}
