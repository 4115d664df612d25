// Contract cases for the batch-invariant bf16 GEMM (kernels/cuda/gemm.cu): one row, small batches, prefill-sized
// batches, sizes that are no multiple of any tile (N odd, K not a multiple of 64), the model's projections
// (MODEL.md §2, §3), every tile configuration forced at row counts it is not picked for, and the invariance cases:
// rows alone against the same rows inside calls of 1, 2, 7, 64 and 257 rows at real shapes (three tile
// configurations, split and unsplit K, meet there). Then the segmented GEMM (several projections of one x in one
// launch) against the same projections as separate GEMMs, byte for byte.
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { type GemmTiles, gemm, gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import { gemmSegments, gemmSegmentsWorkspaceBytes } from '../../../src/backend/cuda/ops/gemmSegments.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type Bf16Tensor, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

type Output = 'bf16' | 'f32';

interface GemmShape {
  readonly rows: number;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly output?: Output;
  readonly tiles?: GemmTiles;
  readonly combine?: 'kernel' | 'last-block';
}

function preparedGemm(shape: GemmShape, x: Bf16Tensor, w: Bf16Tensor): Prepared {
  const { rows, inFeatures, outFeatures } = shape;
  const output = shape.output ?? 'bf16';
  const workspaceBytes = gemmWorkspaceBytes(rows, outFeatures, inFeatures, shape.tiles);
  const inputs: Record<string, Bf16Tensor | Float32Array> = { x, w };
  if (workspaceBytes > 0) inputs.workspace = new Float32Array(workspaceBytes / 4);
  return {
    inputs,
    // An fp32 dot product carries the rounding of its terms' magnitude, not its own: ulps at no less than the RMS.
    outputs: [{ name: 'y', kind: output, count: rows * outFeatures, ulpFloor: output === 'f32' ? 1 : undefined }],
    reference() {
      const y = new Float64Array(rows * outFeatures);
      linearBf16(x.values, w.bits, y, rows, inFeatures, outFeatures, 'fp64');
      return { y };
    },
    run(cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) {
      const a = { y: p.y!, x: p.x!, w: p.w!, workspace: p.workspace, rows, outFeatures, inFeatures, output };
      gemm(cuda, a, { kernel, tiles: shape.tiles, combine: shape.combine });
    },
  };
}

function gemmShape(label: string, shape: GemmShape): ShapeCase {
  const { rows, inFeatures, outFeatures } = shape;
  const tiles = `${shape.tiles ? `, ${shape.tiles} forced` : ''}${shape.combine ? `, ${shape.combine} combine` : ''}`;
  return {
    label: `${label} ${inFeatures}→${outFeatures}, ${rows} row${rows > 1 ? 's' : ''}${tiles}`,
    prepare(random: Random, nonFinite: boolean) {
      const x = randomBf16(random, rows * inFeatures, 1);
      const w = randomBf16(random, outFeatures * inFeatures, 1 / Math.sqrt(inFeatures));
      if (nonFinite) {
        plant(x, 0, Number.NaN);
        plant(w, inFeatures + 1, Number.POSITIVE_INFINITY);
        // In the last K chunk and the last column, so a split's last partial and the N tail carry them too.
        plant(w, outFeatures * inFeatures - 1, Number.NEGATIVE_INFINITY);
      }
      return preparedGemm(shape, x, w);
    },
  };
}

/** Weights once per seed from one stream, the rows in order from another: the first r rows agree for every count ≥ r. */
function gemmInvariance(label: string, inFeatures: number, outFeatures: number, output: Output): InvarianceCase {
  return {
    label: `${label} ${inFeatures}→${outFeatures}, ${output} out`,
    prepare(seed: number, rows: number) {
      const drawWeights = () => randomBf16(streamOf(seed, 0), outFeatures * inFeatures, 1 / Math.sqrt(inFeatures));
      const w = drawnOnce(`gemm ${inFeatures}→${outFeatures}`, seed, drawWeights);
      const x = randomBf16(streamOf(seed, 1), rows * inFeatures, 1);
      return preparedGemm({ rows, inFeatures, outFeatures, output }, x, w);
    },
    elementsPerRow: { y: outFeatures },
  };
}

/** The same inputs through every tile configuration (split K or chunks in registers) and without dependent launch. */
function gemmConfigurations(rows: number, inFeatures: number, outFeatures: number, output: Output): EquivalenceCase {
  return {
    label: `tile configurations ${inFeatures}→${outFeatures}, ${rows} rows, ${output} out`,
    prepare(random: Random) {
      const x = randomBf16(random, rows * inFeatures, 1);
      const w = randomBf16(random, outFeatures * inFeatures, 1 / Math.sqrt(inFeatures));
      const workspace = new Float32Array(gemmWorkspaceBytes(rows, outFeatures, inFeatures, 'rows16') / 4 || 4);
      const schedule = (tiles: GemmTiles, dependentLaunch = true, combine: 'kernel' | 'last-block' = 'kernel') => {
        return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
          const a = { y: p.y!, x: p.x!, w: p.w!, workspace: p.workspace, rows, outFeatures, inFeatures, output };
          gemm(cuda, a, { kernel, tiles, dependentLaunch, combine });
        };
      };
      return {
        inputs: { x, w, workspace },
        outputs: [{ name: 'y', kind: output, count: rows * outFeatures }],
        runs: {
          rows16: schedule('rows16'),
          rows16k128: schedule('rows16k128'),
          rows64: schedule('rows64'),
          rows96: schedule('rows96'),
          wgmma128: schedule('wgmma128'),
          wgmma64: schedule('wgmma64'),
          'wgmma128, last-block combine': schedule('wgmma128', true, 'last-block'),
          'rows16, plain launch': schedule('rows16', false),
          'rows16, last-block combine': schedule('rows16', true, 'last-block'),
          'rows64, last-block combine': schedule('rows64', true, 'last-block'),
        },
      };
    },
  };
}

export const gemmBf16Case: KernelCase = {
  name: 'gemm bf16 (own kernel, batch-invariant)',
  // fp32 accumulation over K ≤ 12288 adds about √K · 2⁻²⁴ ≈ 7e-6 relative error, far below one bf16 rounding.
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    gemmShape('decode, GDN input', { rows: 1, inFeatures: 2048, outFeatures: 12352 }),
    gemmShape('decode, attention q+gate', { rows: 1, inFeatures: 2048, outFeatures: 8192 }),
    gemmShape('decode, attention k/v', { rows: 1, inFeatures: 2048, outFeatures: 512 }),
    gemmShape('decode, output projection', { rows: 1, inFeatures: 4096, outFeatures: 2048 }),
    gemmShape('decode, shared expert down', { rows: 1, inFeatures: 512, outFeatures: 2048 }),
    gemmShape('decode, router', { rows: 1, inFeatures: 2048, outFeatures: 256 }),
    gemmShape('batch 2, tower SwiGLU down', { rows: 2, inFeatures: 6144, outFeatures: 2048 }),
    gemmShape('batch 7, odd sizes', { rows: 7, inFeatures: 1000, outFeatures: 999 }),
    gemmShape('batch 64, shared expert gate|up', { rows: 64, inFeatures: 2048, outFeatures: 1024 }),
    gemmShape('batch 257, odd sizes', { rows: 257, inFeatures: 1000, outFeatures: 999 }),
    gemmShape('batch 130, candidate width', { rows: 130, inFeatures: 264, outFeatures: 4097 }),
    gemmShape('tiny', { rows: 3, inFeatures: 8, outFeatures: 5 }),
    gemmShape('split tiles', { rows: 33, inFeatures: 1000, outFeatures: 999, tiles: 'rows16' }),
    gemmShape('split tiles', { rows: 100, inFeatures: 1000, outFeatures: 130, tiles: 'rows64' }),
    gemmShape('register chunks', { rows: 5, inFeatures: 4096, outFeatures: 300, tiles: 'rows96' }),
    gemmShape('decode, output projection', { rows: 1, inFeatures: 4096, outFeatures: 2048, combine: 'last-block' }),
    gemmShape('batch 37, odd sizes', { rows: 37, inFeatures: 1000, outFeatures: 999, combine: 'last-block' }),
  ],
  invariance: [
    gemmInvariance('output projection', 4096, 2048, 'bf16'),
    gemmInvariance('GDN input', 2048, 12352, 'bf16'),
  ],
  equivalences: [gemmConfigurations(64, 2048, 4097, 'bf16'), gemmConfigurations(37, 4096, 2048, 'bf16')],
};

export const gemmFp32Case: KernelCase = {
  name: 'gemm bf16 → fp32 (own kernel, logits head)',
  // No output rounding: only the fp32 accumulation (≈ √K · 2⁻²⁴ relative) separates it from the fp64 reference.
  bound: 2e-5,
  // At the output's own magnitude a cancelling dot product measured 1303 and 2965 fp32 ulps on the H200 (two seeds):
  // the output counts ulps at its RMS instead (ulpFloor 1), where the norm error (≈ 3e-7) predicts a few ulps.
  ulps: 64,
  shapes: [
    gemmShape('decode, candidate head', { rows: 1, inFeatures: 2048, outFeatures: 4097, output: 'f32' }),
    gemmShape('batch 64, candidate head', { rows: 64, inFeatures: 2048, outFeatures: 4097, output: 'f32' }),
    gemmShape('batch 257, odd sizes', { rows: 257, inFeatures: 1000, outFeatures: 999, output: 'f32' }),
    gemmShape('codebook head', { rows: 7, inFeatures: 2048, outFeatures: 1024, output: 'f32' }),
    gemmShape('odd sizes', { rows: 3, inFeatures: 1000, outFeatures: 4097, output: 'f32', combine: 'last-block' }),
  ],
  invariance: [gemmInvariance('candidate head', 2048, 4097, 'f32')],
  equivalences: [gemmConfigurations(7, 2048, 4097, 'f32')],
};

// The segmented GEMM (several projections of one x in one launch): each segment must give the bits of its own gemm()
// launch. The segments differ in width, in K chunking (12352 columns over 2048 features split K 2 ways, 4097 7 ways,
// 512 and 32 16 ways) and in output dtype (an f32 one, an odd width).
interface SegmentShape {
  readonly outFeatures: number;
  readonly output: Output;
}

/** Segment 0 has the finest chunking, so a kernel that imposed it on the others would change their bits. */
const MIXED_CHUNKINGS: readonly SegmentShape[] = [
  { outFeatures: 512, output: 'bf16' },
  { outFeatures: 12352, output: 'bf16' },
  { outFeatures: 4097, output: 'f32' },
  { outFeatures: 32, output: 'bf16' },
];
/** Gated DeltaNet's input projections: qkv, z, b, a. */
const DELTA_NET_INPUTS: readonly SegmentShape[] = [
  { outFeatures: 8192, output: 'bf16' },
  { outFeatures: 4096, output: 'bf16' },
  { outFeatures: 32, output: 'bf16' },
  { outFeatures: 32, output: 'bf16' },
];
const SEGMENT_ROW_COUNTS: readonly number[] = [1, 2, 7, 16, 17, 64, 65, 257];
/** An f32 output counts against the fp32 case's bounds (no output rounding), a bf16 one against the case's. */
const F32_OUTPUT_BOUNDS = { bound: 2e-5, ulps: 64, ulpFloor: 1 } as const;

function segmentOutputs(rows: number, segments: readonly SegmentShape[]) {
  return segments.map(({ outFeatures, output }, index) => ({
    name: `y${index}`,
    kind: output,
    count: rows * outFeatures,
    ...(output === 'f32' ? F32_OUTPUT_BOUNDS : {}),
  }));
}

/** Bytes of one workspace that fits the fused launch and every separate one (they run one after another). */
function segmentWorkspace(rows: number, inFeatures: number, segments: readonly SegmentShape[]): Float32Array {
  const widths = segments.map((segment) => segment.outFeatures);
  const separate = widths.map((n) => gemmWorkspaceBytes(rows, n, inFeatures));
  return new Float32Array(Math.max(gemmSegmentsWorkspaceBytes(rows, inFeatures, widths), ...separate, 16) / 4);
}

function fusedRun(rows: number, inFeatures: number, segments: readonly SegmentShape[], dependentLaunch = true) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    const list = segments.map(({ outFeatures, output }, index) => ({
      y: p[`y${index}`]!,
      w: p[`w${index}`]!,
      outFeatures,
      output,
    }));
    gemmSegments(
      cuda,
      { x: p.x!, rows, inFeatures, segments: list, workspace: p.workspace },
      { kernel, dependentLaunch },
    );
  };
}

/** The same projections as one gemm() each (the control replaces only the segmented kernel). */
function separateRun(rows: number, inFeatures: number, segments: readonly SegmentShape[]) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    segments.forEach(({ outFeatures, output }, index) => {
      const a = { y: p[`y${index}`]!, x: p.x!, w: p[`w${index}`]!, workspace: p.workspace, outFeatures, output };
      gemm(cuda, { ...a, rows, inFeatures });
    });
  };
}

function segmentWeights(random: Random, inFeatures: number, segments: readonly SegmentShape[]): Bf16Tensor[] {
  return segments.map(({ outFeatures }) => randomBf16(random, outFeatures * inFeatures, 1 / Math.sqrt(inFeatures)));
}

function segmentsShape(label: string, rows: number, inFeatures: number, segments: readonly SegmentShape[]): ShapeCase {
  const widths = segments.map(({ outFeatures, output }) => `${outFeatures}${output === 'f32' ? ' f32' : ''}`);
  return {
    label: `${label} ${inFeatures}→[${widths.join(', ')}], ${rows} row${rows > 1 ? 's' : ''}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const x = randomBf16(random, rows * inFeatures, 1);
      const weights = segmentWeights(random, inFeatures, segments);
      if (nonFinite) {
        plant(x, 0, Number.NaN);
        weights.forEach((w, index) => {
          plant(w, inFeatures + 1, index % 2 === 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY);
          // In the last K chunk and the last column of every segment: each split's last partial and N tail.
          plant(w, w.values.length - 1, Number.NEGATIVE_INFINITY);
        });
      }
      const inputs: Record<string, Bf16Tensor | Float32Array> = {
        x,
        workspace: segmentWorkspace(rows, inFeatures, segments),
      };
      weights.forEach((w, index) => {
        inputs[`w${index}`] = w;
      });
      return {
        inputs,
        outputs: segmentOutputs(rows, segments),
        reference() {
          const outputs: Record<string, Float64Array> = {};
          segments.forEach(({ outFeatures }, index) => {
            const y = new Float64Array(rows * outFeatures);
            linearBf16(x.values, weights[index]!.bits, y, rows, inFeatures, outFeatures, 'fp64');
            outputs[`y${index}`] = y;
          });
          return outputs;
        },
        run: fusedRun(rows, inFeatures, segments),
      };
    },
  };
}

/** Fused against separate at one row count, on the same inputs: every output byte for byte. */
function segmentsAgainstSeparate(rows: number, inFeatures: number, segments: readonly SegmentShape[]): EquivalenceCase {
  return {
    label: `segments against separate GEMMs ${inFeatures}→[${segments.map((s) => s.outFeatures).join(', ')}], ${rows} rows`,
    prepare(random: Random) {
      const inputs: Record<string, Bf16Tensor | Float32Array> = {
        x: randomBf16(random, rows * inFeatures, 1),
        workspace: segmentWorkspace(rows, inFeatures, segments),
      };
      segmentWeights(random, inFeatures, segments).forEach((w, index) => {
        inputs[`w${index}`] = w;
      });
      return {
        inputs,
        outputs: segmentOutputs(rows, segments),
        runs: {
          separate: separateRun(rows, inFeatures, segments),
          segmented: fusedRun(rows, inFeatures, segments),
          'segmented, plain launch': fusedRun(rows, inFeatures, segments, false),
        },
      };
    },
  };
}

/** Weights once per seed, rows in order: row r's outputs alone and inside every larger fused call. */
function segmentsInvariance(inFeatures: number, segments: readonly SegmentShape[]): InvarianceCase {
  return {
    label: `segments ${inFeatures}→[${segments.map((s) => s.outFeatures).join(', ')}]`,
    rowCounts: SEGMENT_ROW_COUNTS,
    prepare(seed: number, rows: number): Prepared {
      const weights = segments.map(({ outFeatures }, index) =>
        drawnOnce(`gemm segment ${index} ${inFeatures}→${outFeatures}`, seed, () =>
          randomBf16(streamOf(seed, index + 2), outFeatures * inFeatures, 1 / Math.sqrt(inFeatures)),
        ),
      );
      const x = randomBf16(streamOf(seed, 1), rows * inFeatures, 1);
      const inputs: Record<string, Bf16Tensor | Float32Array> = {
        x,
        workspace: segmentWorkspace(rows, inFeatures, segments),
      };
      weights.forEach((w, index) => {
        inputs[`w${index}`] = w;
      });
      return {
        inputs,
        outputs: segmentOutputs(rows, segments),
        reference: () => ({}),
        run: fusedRun(rows, inFeatures, segments),
      };
    },
    elementsPerRow: Object.fromEntries(segments.map((segment, index) => [`y${index}`, segment.outFeatures])),
  };
}

export const gemmSegmentsCase: KernelCase = {
  name: 'gemm segments (several projections of one x in one launch, each with its own bits)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    segmentsShape('decode, Gated DeltaNet inputs', 1, 2048, DELTA_NET_INPUTS),
    segmentsShape('decode, mixed chunkings', 1, 2048, MIXED_CHUNKINGS),
    segmentsShape('batch, chunkings 7 and 16', 7, 2048, [
      { outFeatures: 4097, output: 'f32' },
      { outFeatures: 512, output: 'bf16' },
      { outFeatures: 999, output: 'bf16' },
    ]),
    segmentsShape('batch, one segment', 17, 2048, [{ outFeatures: 4097, output: 'bf16' }]),
    segmentsShape('small batch', 64, 1000, [
      { outFeatures: 999, output: 'bf16' },
      { outFeatures: 130, output: 'f32' },
      { outFeatures: 8, output: 'bf16' },
    ]),
    segmentsShape('prefill, chunks in registers', 65, 2048, [
      { outFeatures: 4097, output: 'f32' },
      { outFeatures: 512, output: 'bf16' },
    ]),
    segmentsShape('prefill, odd sizes', 257, 1000, [
      { outFeatures: 999, output: 'bf16' },
      { outFeatures: 130, output: 'f32' },
      { outFeatures: 8, output: 'bf16' },
    ]),
  ],
  invariance: [segmentsInvariance(2048, MIXED_CHUNKINGS)],
  equivalences: SEGMENT_ROW_COUNTS.map((rows) => segmentsAgainstSeparate(rows, 2048, MIXED_CHUNKINGS)),
};
