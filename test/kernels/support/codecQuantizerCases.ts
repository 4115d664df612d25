// Contract case for the quantizer's code lookup (kernels/cuda/codec_rows.cu codec_quantizer_decode) against the cpu
// codec's own Quantizer.decode (src/codec/quantizer.ts): the real sizes (latent 1024, 10 codebooks of 8 dims, 4096
// semantic and 1024 residual entries, src/shared/frame.ts), odd sizes, one codebook alone, codes outside their
// codebook (clamped as the cpu clamps them), and dyadic values whose every product and projection is exact, so that
// only the order of the codebook sums can round differently: that shape is held to the cpu's bits exactly.
import {
  codecQuantizerDecode,
  type QuantizerCodebook,
  quantizerTables,
} from '../../../src/backend/cuda/ops/codecRows.ts';
import { REAL_CODEC_CONFIG } from '../../../src/codec/config.ts';
import { codebookPrefix, Quantizer } from '../../../src/codec/quantizer.ts';
import type { KernelCase, OutputSpec, Prepared, ShapeCase } from './contract.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

/**
 * Each codebook's eight fp32 fmas against one fp64 rounding (a few ulps of the projection), then nine rounded sums:
 * up to about ten ulps at the output's RMS.
 */
const QUANTIZER_BOUND = 1e-6;
const QUANTIZER_ULPS = 12;

interface QuantizerShape {
  readonly latent: number;
  readonly codebookDim: number;
  readonly codebooks: number;
  readonly semanticSize: number;
  readonly residualSize: number;
  /** Dyadic values at a power-of-two scale per codebook: exact products, rounding only in the codebook sums. */
  readonly dyadic?: boolean;
}

/** Integers in [−limit, limit] over `denominator`, times `scale`: exactly representable. */
function dyadicValues(random: Random, count: number, limit: number, denominator: number, scale: number) {
  return Float32Array.from({ length: count }, () => ((random.integer(2 * limit + 1) - limit) / denominator) * scale);
}

function drawCodebook(shape: QuantizerShape, size: number, random: Random, semantic: boolean): QuantizerCodebook {
  const { latent, codebookDim: dim } = shape;
  if (shape.dyadic) {
    // The semantic projection far above the residual ones: added first, it swallows their low bits, so any other
    // order of the sums rounds differently somewhere in the shape, whatever the seed.
    const scale = semantic ? 2 ** 12 : 2 ** (random.integer(9) - 12);
    return {
      entries: dyadicValues(random, size * dim, 8, 8, 1),
      outWeight: dyadicValues(random, latent * dim, 8, 8, scale),
      outBias: dyadicValues(random, latent, 64, 64, scale),
    };
  }
  return {
    entries: randomFloat32(random, size * dim, 1),
    outWeight: randomFloat32(random, latent * dim, 1 / Math.sqrt(dim)),
    outBias: randomFloat32(random, latent, 0.1),
  };
}

/** The cpu Quantizer over these codebooks (in_proj unused by decode, left empty): frames → rows [frames, latent]. */
function cpuDecode(shape: QuantizerShape, codebooks: readonly QuantizerCodebook[], codes: Int32Array, frames: number) {
  const weights = new Map<string, Float32Array>();
  codebooks.forEach((codebook, index) => {
    const prefix = codebookPrefix(index);
    weights.set(`${prefix}.codebook.weight`, codebook.entries);
    weights.set(`${prefix}.in_proj.weight`, new Float32Array(0));
    weights.set(`${prefix}.in_proj.bias`, new Float32Array(0));
    weights.set(`${prefix}.out_proj.weight`, codebook.outWeight);
    weights.set(`${prefix}.out_proj.bias`, codebook.outBias);
  });
  const config = {
    ...REAL_CODEC_CONFIG,
    latentDim: shape.latent,
    codebookDim: shape.codebookDim,
    semanticCodebookSize: shape.semanticSize,
    residualCodebooks: shape.codebooks - 1,
    residualCodebookSize: shape.residualSize,
  };
  const { codebooks: count, latent } = shape;
  const list = Array.from({ length: frames }, (_, frame) => codes.slice(frame * count, (frame + 1) * count));
  const channelsFirst = new Float32Array(latent * frames);
  new Quantizer(weights, config).decode(list, channelsFirst);
  const out = new Float64Array(frames * latent);
  for (let frame = 0; frame < frames; frame++) {
    for (let channel = 0; channel < latent; channel++)
      out[frame * latent + channel] = channelsFirst[channel * frames + frame]!;
  }
  return out;
}

/** Codes mostly inside their codebook, some a little outside it; `extremes` adds −1, the size and the int32 limits. */
function drawCodes(shape: QuantizerShape, frames: number, random: Random, extremes: boolean): Int32Array {
  const codes = new Int32Array(frames * shape.codebooks);
  for (let index = 0; index < codes.length; index++) {
    const size = index % shape.codebooks === 0 ? shape.semanticSize : shape.residualSize;
    codes[index] = random.integer(size + 4) - 2;
  }
  if (extremes && frames >= 3) {
    const { codebooks } = shape;
    codes.set([-1, 2 ** 31 - 1].slice(0, codebooks), codebooks);
    codes.set([shape.semanticSize, -(2 ** 31), shape.residualSize].slice(0, codebooks), 2 * codebooks);
  }
  return codes;
}

function quantizerPrepared(
  shape: QuantizerShape,
  frames: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
  extremes: boolean,
): Prepared {
  const codebooks = Array.from({ length: shape.codebooks }, (_, index) =>
    drawCodebook(shape, index === 0 ? shape.semanticSize : shape.residualSize, draw(index), index === 0),
  );
  const codes = drawCodes(shape, frames, draw(shape.codebooks), extremes);
  if (nonFinite) {
    const semanticCode = Math.min(Math.max(codes[0]!, 0), shape.semanticSize - 1);
    codebooks[0]!.entries[semanticCode * shape.codebookDim] = Number.NaN;
    const last = codebooks.at(-1)!;
    last.outWeight[Math.min(2, shape.latent - 1) * shape.codebookDim + (shape.codebookDim > 1 ? 1 : 0)] = Infinity;
  }
  const tables = quantizerTables(codebooks[0]!, codebooks.slice(1), shape);
  const exact = shape.dyadic ? { bound: 0, ulps: 0 } : {};
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count: frames * shape.latent, ulpFloor: 1, ...exact }];
  const { residualEntries, ...rest } = tables;
  return {
    inputs: { codes, ...rest, ...(residualEntries.length > 0 ? { residualEntries } : {}) },
    outputs,
    reference: () => ({ out: cpuDecode(shape, codebooks, codes, frames) }),
    run(cuda, p, kernel) {
      const { latent, codebookDim, codebooks: count, semanticSize, residualSize } = shape;
      const sizes = { latent, codebookDim, codebooks: count, semanticSize, residualSize, frames };
      const pointers = {
        semanticEntries: p.semanticEntries!,
        // One codebook reads no residual entries: any valid pointer stands in.
        residualEntries: p.residualEntries ?? p.semanticEntries!,
        outWeights: p.outWeights!,
        outBiases: p.outBiases!,
      };
      codecQuantizerDecode(cuda, { out: p.out!, codes: p.codes!, ...sizes, ...pointers }, { kernel });
    },
  };
}

function quantizerShape(label: string, shape: QuantizerShape, frames: number): ShapeCase {
  const { latent, codebooks, codebookDim, semanticSize, residualSize } = shape;
  return {
    label: `${label} [${frames} frames → ${latent}, ${codebooks} codebooks of ${codebookDim}, ${semanticSize}/${residualSize} entries]`,
    prepare: (random, nonFinite) => quantizerPrepared(shape, frames, () => random, nonFinite, true),
  };
}

const real: QuantizerShape = { latent: 1024, codebookDim: 8, codebooks: 10, semanticSize: 4096, residualSize: 1024 };
const odd: QuantizerShape = { latent: 45, codebookDim: 5, codebooks: 3, semanticSize: 7, residualSize: 11 };

export const codecQuantizerCase: KernelCase = {
  name: 'codec rows: quantizer decode (codes → latent)',
  bound: QUANTIZER_BOUND,
  ulps: QUANTIZER_ULPS,
  shapes: [
    quantizerShape('real sizes, codes outside their codebook in frames 1 and 2', real, 6),
    quantizerShape('dyadic values, exact but for the order of the sums', { ...real, dyadic: true }, 9),
    quantizerShape('odd sizes', odd, 4),
    quantizerShape('the semantic codebook alone', { ...odd, latent: 37, codebooks: 1 }, 3),
  ],
  invariance: [
    {
      label: 'frames of odd sizes',
      prepare: (seed: number, frames: number) =>
        quantizerPrepared(odd, frames, (index) => streamOf(seed, index), false, false),
      elementsPerRow: { out: odd.latent },
    },
  ],
};
