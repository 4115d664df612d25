// The routed experts in the grouped GEMMs' packed layout (./moeWeights.ts), made on the device from the per-expert
// tensors the loader placed there: one re-layout launch for every expert's gate|up, one for every down (kernels/cuda/
// moe_pack.cu, reading a table of the experts' pointers) and, for FP8, one gather each for the gate|up and the down
// block scales: a handful of launches a block where one per expert made the load's plan wait on the host. The packed
// buffers live as long as the weights object; the per-expert tensors are freed once packed (BlockContext.releaseWeights),
// so the experts are held twice only while one block is being packed.
import type { MoeWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { Allocation } from './memory.ts';
import type { MoeGeometry } from './moe-geometry.ts';
import type { MoeBf16Weights, MoeFp8Weights } from './ops/moe.ts';
import { moeGatherWords, moePackRows, sourceTable } from './ops/moePack.ts';
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

/** The tables end to end in one array, and the byte offset at which each begins. */
function concatenated(tables: readonly BigInt64Array[]): { entries: BigInt64Array; offsets: bigint[] } {
  const entries = new BigInt64Array(tables.reduce((sum, table) => sum + table.length, 0));
  const offsets: bigint[] = [];
  let at = 0;
  for (const table of tables) {
    entries.set(table, at);
    offsets.push(BigInt(at * BigInt64Array.BYTES_PER_ELEMENT));
    at += table.length;
  }
  return { entries, offsets };
}

/** Packs every expert of `weights` (checked by moeGeometry) into fresh device buffers. */
export function packExperts(ctx: BlockContext, weights: MoeWeights<CudaBuffer>, g: MoeGeometry): PackedExperts {
  const experts = weights.experts;
  const pointers = (pick: (expert: (typeof experts)[number]) => CudaBuffer) => experts.map((e) => pick(e).pointer);
  // One table for every launch: gate|up rows, down rows, then (FP8) the scales as shipped: the gate's then the up's
  // of each expert, and down's.
  const tables = [
    sourceTable(
      pointers((e) => e.gate.data),
      pointers((e) => e.up.data),
    ),
    sourceTable(pointers((e) => e.down.data)),
  ];
  if (g.format === 'fp8') {
    tables.push(
      BigInt64Array.from(experts.flatMap((e) => [e.gate.scales!.data.pointer, e.up.scales!.data.pointer])),
      BigInt64Array.from(pointers((e) => e.down.scales!.data)),
    );
  }
  const { entries, offsets } = concatenated(tables);
  const held = allocateAll(ctx, packedExpertBytes(g), g.format);
  const pointer = (name: string) => held.get(name)!.pointer;
  const element = g.format === 'fp8' ? 1 : 2;
  const scaleWords = (g.intermediate / 128) * (g.hidden / 128);
  let table: Allocation | undefined;
  try {
    table = ctx.cuda.upload(entries, 'moe expert pointers');
    const base = 0n;
    const sources = table.pointer;
    moePackRows(ctx.cuda, {
      target: pointer('gateUp'),
      targetStride: 2 * g.intermediate * g.hidden * element,
      base,
      sources: sources + offsets[0]!,
      experts: experts.length,
      rowBytes: g.hidden * element,
      groups: (2 * g.intermediate) / 16,
      interleaved: true,
    });
    moePackRows(ctx.cuda, {
      target: pointer('down'),
      targetStride: g.hidden * g.intermediate * element,
      base,
      sources: sources + offsets[1]!,
      experts: experts.length,
      rowBytes: g.intermediate * element,
      groups: g.hidden / 16,
      interleaved: false,
    });
    if (g.format === 'fp8') {
      const runs = { base, words: scaleWords };
      moeGatherWords(ctx.cuda, {
        ...runs,
        target: pointer('gateUpScales'),
        offsets: sources + offsets[2]!,
        runs: 2 * experts.length,
      });
      moeGatherWords(ctx.cuda, {
        ...runs,
        target: pointer('downScales'),
        offsets: sources + offsets[3]!,
        runs: experts.length,
      });
    }
  } catch (error) {
    // Work already queued may still write the buffers: let it finish, then give them back.
    ctx.cuda.synchronize();
    table?.free();
    for (const allocation of held.values()) allocation.free();
    throw error;
  }
  // The packed copy replaces the per-expert tensors: free them, so the experts are not held twice.
  ctx.releaseWeights(weights.experts.flatMap((expert) => [expert.gate, expert.up, expert.down]));
  // The launches read the table until they finish.
  ctx.cuda.synchronize();
  table.free();
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
