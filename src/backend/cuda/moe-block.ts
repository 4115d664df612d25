// The sparse MoE block on the device, the computation of src/backend/cpu/moe-block.ts with its bf16 rounding points:
//   logits = router(x) [T, E] bf16 (the cpu rounds the router projection too); softmax, top-k, renormalise in fp32
//   (router.cu; with FP8 experts router_quantize.cu, which quantises x in the same launch; with FP8 experts and one row
//   the gate|up GEMM's launch routes, quantises and groups itself, moe_fp8_routed.cuh) → ids [T, k] i32, weights
//   [T, k] f32, grouped by expert by the router launch's last block (moe_group.cuh); the grouped GEMMs run the routed
//   experts (FP8: x, and h inside the down GEMM, quantised per row per 128 columns; bf16: x as is), each expert output
//   bf16; the shared expert (a SwiGLU MLP) and its gate logit bf16; the combine sums each row's experts in ascending
//   expert id with bf16 weights, adds sigmoid(gate) · shared, in fp64, and rounds fp64 → fp32 → bf16 (moe_route.cu).
//   With FP8 experts: the shared expert's gate|up (with the router's and its gate's logits) and SwiGLU; then its down
//   projection on the side stream beside router + quantiser + grouping, gate|up, down (CudaContext.alongside); then
//   the combine. Each fused launch writes the bits of the separate ones it replaced (the same device functions,
//   integer tables, the same quantiser), and the side stream changes no launch's inputs, so no bit.
// Where the device differs from the cpu below a bf16 rounding: the softmax's exp and sums are fp32 (the cpu's are
// fp64, each probability then rounded to fp32), the renormalised weights are fp32 quotients, and the expert GEMMs
// accumulate in fp32 (the cpu in fp64); SwiGLU products are fp32 before their one bf16 rounding.
// Every launch is sized from rows and the weights' shapes (grids are the worst case of the routing), nothing is read
// back: the block can be captured in a CUDA graph. The packed experts are made once per weights object.
import { DramaError } from '../../errors.ts';
import type { MoeWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import { type PackedExperts, packExperts } from './moe-experts.ts';
import { type MoeGeometry, moeGeometry } from './moe-geometry.ts';
import { moeCombine, moeExpertsBf16, moeExpertsFp8, moeGroupingBytes } from './ops/moe.ts';
import { MOE_ROUTED_ROWS, moeDownFp8Routed, moeGateUpFp8Routed } from './ops/moeRouted.ts';
import { type RouterGrouping, routerTopK } from './ops/router.ts';
import { routerTopKQuantize } from './ops/routerQuantize.ts';
import { swiGluHidden } from './swiglu-block.ts';
import { type CudaBuffer, requireDtype } from './tensors.ts';

/** The most rows an FP8 call takes: one grid's y extent, the most any test covers. */
const FP8_MAX_ROWS = 65535;
/** The combine and the bf16 experts move 8 bf16 values (16 bytes) at a time. */
const VECTOR_BYTES = 16n;

interface PreparedMoe {
  readonly geometry: MoeGeometry;
  readonly packed: PackedExperts;
}

function refuse(code: string, message: string): never {
  throw new DramaError(code, message, { kind: 'internal' });
}

function requireRows(rows: number, g: MoeGeometry): void {
  if (!Number.isInteger(rows) || rows < 1)
    refuse('MOE_ROWS_INVALID', `the MoE block needs 1 or more rows, got ${rows}`);
  if (g.format === 'fp8' && rows > FP8_MAX_ROWS) {
    refuse('MOE_ROWS_INVALID', `FP8 experts take at most ${FP8_MAX_ROWS} rows in one call, got ${rows}`);
  }
}

function requireActivation(buffer: CudaBuffer, elements: number, name: string): void {
  requireDtype(buffer, 'bf16', name);
  if (buffer.elements < elements) {
    refuse('MOE_BUFFER_TOO_SMALL', `${name} holds ${buffer.elements} elements, the call needs ${elements}`);
  }
  if (buffer.pointer % VECTOR_BYTES !== 0n) refuse('MOE_BUFFER_MISALIGNED', `${name} must be 16-byte aligned`);
}

/**
 * The grouping's four buffers under 'moe.' names, sized for this call, and the router launch's arrival counter (zeroed
 * when allocated, left at zero by every launch: safe in a graph replayed any number of times).
 */
function groupingScratch(ctx: BlockContext, rows: number, g: MoeGeometry): RouterGrouping {
  const bytes = moeGroupingBytes(rows, g.topK, g.experts);
  return {
    pairSlots: ctx.scratch.bytes('moe.pairSlots', bytes.pairSlots),
    expertOffsets: ctx.scratch.bytes('moe.expertOffsets', bytes.expertOffsets),
    tiles: ctx.scratch.bytes('moe.tiles', bytes.tiles),
    tileCount: ctx.scratch.bytes('moe.tileCount', bytes.tileCount),
    arrivals: ctx.scratch.bytes('moe.arrivals', bytes.arrivals),
  };
}

export function runMoe(
  ctx: BlockContext,
  weights: MoeWeights<CudaBuffer>,
  x: CudaBuffer,
  out: CudaBuffer,
  rows: number,
): void {
  const { geometry: g, packed } = ctx.prepared(weights, 'moe', (): PreparedMoe => {
    const geometry = moeGeometry(weights);
    return { geometry, packed: packExperts(ctx, weights, geometry) };
  });
  requireRows(rows, g);
  requireActivation(x, rows * g.hidden, 'moe input');
  requireActivation(out, rows * g.hidden, 'moe output');
  const { cuda, scratch } = ctx;
  const pairs = rows * g.topK;

  // The router logits and the shared expert's gate logit ride in the shared expert's gate|up launch (all read x).
  const logits = scratch.buffer('moe.logits', 'bf16', rows * g.experts);
  const sharedGate = scratch.buffer('moe.sharedGate', 'bf16', rows);
  const sharedOut = scratch.buffer('moe.sharedOut', 'bf16', rows * g.hidden);
  const sharedHidden = swiGluHidden(ctx, weights.shared, x, rows, [
    { weight: weights.router, out: logits },
    { weight: weights.sharedGate, out: sharedGate },
  ]);
  const expertIds = scratch.buffer('moe.expertIds', 'i32', pairs);
  const expertWeights = scratch.buffer('moe.expertWeights', 'f32', pairs);
  const grouping = groupingScratch(ctx, rows, g);
  const routing = { experts: g.experts, topK: g.topK, rows };
  const routed = {
    expertIds: expertIds.pointer,
    expertWeights: expertWeights.pointer,
    logits: logits.pointer,
    grouping,
  };

  const common = {
    ...grouping,
    ...routing,
    out: out.pointer,
    h: scratch.buffer('moe.h', 'bf16', pairs * g.intermediate).pointer,
    expertOut: scratch.buffer('moe.expertOut', 'bf16', pairs * g.hidden).pointer,
    expertIds: expertIds.pointer,
    expertWeights: expertWeights.pointer,
    sharedOut: sharedOut.pointer,
    sharedGate: sharedGate.pointer,
    hidden: g.hidden,
    intermediate: g.intermediate,
  };
  const routedExperts = () => {
    if (packed.format === 'fp8' && rows === MOE_ROUTED_ROWS) {
      // One row (a decode step of one lane): the router's launch folds into the gate|up GEMM's and the down GEMM takes
      // each choice's expert from the ids, the same bits.
      moeGateUpFp8Routed(cuda, { ...common, logits: logits.pointer, x: x.pointer, weights: packed.weights });
      moeDownFp8Routed(cuda, { ...common, y: common.expertOut, weights: packed.weights });
    } else if (packed.format === 'fp8') {
      const quantized = scratch.bytes('moe.quantized', rows * g.hidden);
      const scales = scratch.buffer('moe.scales', 'f32', rows * (g.hidden / 128)).pointer;
      // x is quantised for the gate|up GEMM and the choices grouped by the router's launch: two launches fewer, the
      // same bits.
      routerTopKQuantize(cuda, { ...routed, ...routing, q: quantized, scales, x: x.pointer, cols: g.hidden });
      moeExpertsFp8(cuda, { ...common, quantized, scales, weights: packed.weights, combine: false });
    } else {
      routerTopK(cuda, { ...routed, ...routing });
      moeExpertsBf16(cuda, { ...common, x: x.pointer, weights: packed.weights, combine: false });
    }
  };
  // The shared expert's down projection needs none of the routing: it runs on the side stream beside the router and
  // the routed experts (its GEMM's workspace is the linears' own, which the routed kernels never touch), and the
  // combine waits for both.
  cuda.alongside(() => ctx.linear(sharedHidden, weights.shared.down, sharedOut, rows), routedExperts);
  moeCombine(cuda, common);
}
