// Contract case for the router, the MoE input's e4m3 quantisation and the grouping of the choices by expert in one
// launch (kernels/cuda/router_quantize.cu): its ids and weights against the cpu router (held as the router case holds
// router_top_k), its e4m3 bytes and fp32 scales against quantizeActivationsE4m3 exactly (as the quantize case holds
// quantize_e4m3_rows), its grouping tables exactly equal to the reference grouping of the reference ids (as the
// grouping case holds moe_group_pairs), at the real geometry (256 experts, top-8, hidden 2048), odd sizes, many pairs
// per expert, one expert in every row, more column blocks than the block has quantising warps, and the most one
// routing warp holds (512 experts, top-32: beyond the grouping's 256 experts, so launched without one). Its invariance
// runs group too (into scratch: the tables are not per row).
import { quantizeActivationsE4m3 } from '../../../src/backend/cpu/ops/fp8.ts';
import { routerTopK as routerReference } from '../../../src/backend/cpu/ops/router.ts';
import { FP8_ACTIVATION_BLOCK } from '../../../src/backend/cuda/ops/quantizeFp8.ts';
import { routerTopKQuantize } from '../../../src/backend/cuda/ops/routerQuantize.ts';
import type { KernelCase, Prepared, ShapeCase } from './contract.ts';
import { packedBytes, wideRangeBf16 } from './quantizeCases.ts';
import { type Bf16Tensor, plant, type Random, randomBf16, streamOf } from './random.ts';
import {
  routerGroupingInputs,
  routerGroupingOutputs,
  routerGroupingPointers,
  routerGroupingReference,
} from './routerGrouping.ts';

/** Whether the launch groups, and whether its tables are outputs the case checks or scratch it does not compare. */
type Grouping = 'none' | 'checked' | 'scratch';

interface Sizes {
  readonly rows: number;
  readonly experts: number;
  readonly topK: number;
  /** x's width; rows × cols a multiple of 4 (the bytes are compared as int32 words). */
  readonly cols: number;
}

function routedAndQuantized(sizes: Sizes, logits: Bf16Tensor, x: Bf16Tensor, grouping: Grouping): Prepared {
  const { rows, experts, topK, cols } = sizes;
  if ((rows * cols) % 4 !== 0) throw new Error(`the case needs rows × cols divisible by 4, got ${rows} × ${cols}`);
  const blocks = Math.ceil(cols / FP8_ACTIVATION_BLOCK);
  const groupingInputs = grouping === 'none' ? {} : routerGroupingInputs(sizes, grouping === 'scratch');
  return {
    inputs: { logits, x, ...groupingInputs },
    outputs: [
      ...(grouping === 'checked' ? routerGroupingOutputs(sizes) : []),
      { name: 'ids', kind: 'i32', count: rows * topK },
      { name: 'weights', kind: 'f32', count: rows * topK },
      { name: 'q', kind: 'i32', count: (rows * cols) / 4 },
      // One fp32 division, as the reference forms it: exactly equal.
      { name: 'scales', kind: 'f32', count: rows * blocks, bound: 0, ulps: 0 },
    ],
    reference() {
      const ids = new Int32Array(rows * topK);
      const weights = new Float64Array(rows * topK);
      routerReference(logits.values, rows, experts, topK, ids, weights);
      const quantized = new Float64Array(rows * cols);
      const scales = new Float64Array(rows * blocks);
      quantizeActivationsE4m3(x.values, rows, cols, quantized, scales);
      const tables = grouping === 'checked' ? routerGroupingReference(ids, experts) : {};
      return { ...tables, ids, weights, q: packedBytes(quantized), scales };
    },
    run(cuda, p, kernel) {
      const routing = { expertIds: p.ids!, expertWeights: p.weights!, logits: p.logits!, rows, experts, topK };
      const grouped = grouping === 'none' ? {} : { grouping: routerGroupingPointers(p) };
      routerTopKQuantize(cuda, { ...routing, ...grouped, q: p.q!, scales: p.scales!, x: p.x!, cols }, { kernel });
    },
  };
}

interface ShapeOptions {
  readonly zeroBlock?: boolean;
  /** An expert every row chooses first (its logit raised well above the rest). */
  readonly favourite?: number;
}

function fusedShape(label: string, sizes: Sizes, grouping: Grouping, options: ShapeOptions = {}): ShapeCase {
  const { rows, experts, topK, cols } = sizes;
  const { zeroBlock = false, favourite } = options;
  const grouped = grouping === 'none' ? '' : ', grouped';
  return {
    label: `${label} [${rows}, ${experts}] top-${topK}, x [${rows}, ${cols}]${grouped}`,
    prepare(random: Random, nonFinite: boolean) {
      const logits = randomBf16(random, rows * experts, 1);
      const x = wideRangeBf16(random, rows * cols);
      if (favourite !== undefined) for (let row = 0; row < rows; row++) plant(logits, row * experts + favourite, 8);
      if (zeroBlock) for (let column = 0; column < Math.min(cols, FP8_ACTIVATION_BLOCK); column++) plant(x, column, 0);
      if (nonFinite) {
        plant(logits, 5, Number.NaN);
        if (rows > 1) plant(logits, experts + 7, Number.POSITIVE_INFINITY);
        if (rows > 2) plant(logits, 2 * experts + 9, Number.NEGATIVE_INFINITY);
        plant(x, zeroBlock ? cols - 1 : 0, Number.NaN);
        plant(x, Math.min(rows * cols - 1, cols + 5), Number.POSITIVE_INFINITY);
        plant(x, rows * cols - 2, Number.NEGATIVE_INFINITY);
      }
      return routedAndQuantized(sizes, logits, x, grouping);
    },
  };
}

const REAL = { experts: 256, topK: 8, cols: 2048 };

export const routerQuantizeCase: KernelCase = {
  name: 'fused router + quantize e4m3 of x + grouping',
  // The router's weights as the router case bounds them; the scales carry their own exact bounds, the ids and bytes
  // are compared exactly.
  bound: 1e-5,
  ulps: 64,
  shapes: [
    fusedShape('one row, real', { rows: 1, ...REAL }, 'checked'),
    fusedShape('odd sizes, zero block', { rows: 37, experts: 100, topK: 3, cols: 1000 }, 'checked', {
      zeroBlock: true,
    }),
    fusedShape('many pairs per expert', { rows: 257, experts: 8, topK: 2, cols: 512 }, 'checked'),
    fusedShape('one expert in every row', { rows: 64, ...REAL }, 'checked', { favourite: 3 }),
    fusedShape('18 column blocks for 16 warps', { rows: 3, experts: 300, topK: 5, cols: 2304 }, 'none'),
    fusedShape('most experts and choices', { rows: 5, experts: 512, topK: 32, cols: 128 }, 'none'),
    fusedShape('prefill chunk, real', { rows: 256, ...REAL }, 'checked'),
  ],
  invariance: [
    {
      label: 'rows of 256 experts, top-8, hidden 2048, grouped',
      prepare(seed: number, rows: number) {
        const logits = randomBf16(streamOf(seed, 0), rows * REAL.experts, 1);
        const x = wideRangeBf16(streamOf(seed, 1), rows * REAL.cols);
        return routedAndQuantized({ rows, ...REAL }, logits, x, 'scratch');
      },
      elementsPerRow: { ids: 8, weights: 8, q: REAL.cols / 4, scales: REAL.cols / FP8_ACTIVATION_BLOCK },
    },
  ],
};
