// Contract case for the quantizer's encode (kernels/cuda/codec_quantize.cu codec_quantizer_encode) against the cpu
// codec's own Quantizer.encode (src/codec/quantizer.ts): the kernel repeats its fp64 and fp32 steps one for one, so
// codes and margins are held to the cpu's exactly. Shapes: the real sizes (latent 1024, 10 codebooks of 8 dims, 4096
// semantic and 1024 residual entries), odd sizes, the semantic codebook alone, and codebooks whose second half
// repeats the first, where every nearest entry is an exact tie that the first copy must win (Quantizer's strict <).
import {
  codecQuantizerEncode,
  type EncodeCodebook,
  quantizerEncodeTables,
} from '../../../src/backend/cuda/ops/codecQuantize.ts';
import { REAL_CODEC_CONFIG } from '../../../src/codec/config.ts';
import { codebookPrefix, normalisedEntries, Quantizer } from '../../../src/codec/quantizer.ts';
import type { KernelCase, Prepared, ShapeCase } from './contract.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

interface EncodeShape {
  readonly latent: number;
  readonly codebookDim: number;
  readonly codebooks: number;
  readonly semanticSize: number;
  readonly residualSize: number;
  /** Each codebook's second half repeats its first: every nearest entry ties with its copy. */
  readonly repeated?: boolean;
}

function drawCodebook(shape: EncodeShape, size: number, random: Random): EncodeCodebook {
  const { latent, codebookDim: dim } = shape;
  const entries = randomFloat32(random, size * dim, 1);
  if (shape.repeated) entries.copyWithin(Math.ceil(size / 2) * dim, 0, Math.floor(size / 2) * dim);
  const { normalised, squares } = normalisedEntries(entries, size, dim);
  return {
    entries,
    normalised,
    squares,
    inWeight: randomFloat32(random, dim * latent, 1 / Math.sqrt(latent)),
    inBias: randomFloat32(random, dim, 0.1),
    outWeight: randomFloat32(random, latent * dim, 1 / Math.sqrt(dim)),
    outBias: randomFloat32(random, latent, 0.1),
  };
}

/** The cpu Quantizer over these codebooks: rows [frames, latent] → codes and margins [frames, K]. */
function cpuEncode(shape: EncodeShape, codebooks: readonly EncodeCodebook[], z: Float32Array, frames: number) {
  const weights = new Map<string, Float32Array>();
  codebooks.forEach((codebook, index) => {
    const prefix = codebookPrefix(index);
    weights.set(`${prefix}.codebook.weight`, codebook.entries);
    weights.set(`${prefix}.in_proj.weight`, codebook.inWeight);
    weights.set(`${prefix}.in_proj.bias`, codebook.inBias);
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
  const { latent, codebooks: count } = shape;
  const channelsFirst = new Float32Array(latent * frames);
  for (let frame = 0; frame < frames; frame++) {
    for (let channel = 0; channel < latent; channel++)
      channelsFirst[channel * frames + frame] = z[frame * latent + channel]!;
  }
  const margins = new Float64Array(frames * count);
  const codes = new Int32Array(frames * count);
  new Quantizer(weights, config).encode(channelsFirst, frames, margins).forEach((frame, index) => {
    codes.set(frame, index * count);
  });
  return { codes, margins };
}

function encodePrepared(
  shape: EncodeShape,
  frames: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const codebooks = Array.from({ length: shape.codebooks }, (_, index) =>
    drawCodebook(shape, index === 0 ? shape.semanticSize : shape.residualSize, draw(index)),
  );
  const z = randomFloat32(draw(shape.codebooks), frames * shape.latent, 1);
  if (nonFinite) {
    z[Math.min(3, shape.latent - 1)] = Number.NaN;
    if (frames > 1) z[shape.latent + Math.min(5, shape.latent - 1)] = Number.POSITIVE_INFINITY;
  }
  const tables = quantizerEncodeTables(codebooks, shape);
  const count = frames * shape.codebooks;
  return {
    inputs: { z, ...tables },
    outputs: [
      { name: 'codes', kind: 'i32', count },
      { name: 'margins', kind: 'f64', count, bound: 0, ulps: 0 },
    ],
    reference: () => cpuEncode(shape, codebooks, z, frames),
    run(cuda, p, kernel) {
      const { latent, codebookDim, codebooks: codebookCount, semanticSize, residualSize } = shape;
      const sizes = { latent, codebookDim, codebooks: codebookCount, semanticSize, residualSize, frames };
      const pointers = {
        inWeights: p.inWeights!,
        inBiases: p.inBiases!,
        entries: p.entries!,
        normalised: p.normalised!,
        squares: p.squares!,
        outWeights: p.outWeights!,
        outBiases: p.outBiases!,
      };
      codecQuantizerEncode(cuda, { codes: p.codes!, margins: p.margins!, z: p.z!, ...sizes, ...pointers }, { kernel });
    },
  };
}

function encodeShape(label: string, shape: EncodeShape, frames: number): ShapeCase {
  const { latent, codebooks, codebookDim, semanticSize, residualSize } = shape;
  return {
    label: `${label} [${frames} frames of ${latent}, ${codebooks} codebooks of ${codebookDim}, ${semanticSize}/${residualSize} entries]`,
    prepare: (random, nonFinite) => encodePrepared(shape, frames, () => random, nonFinite),
  };
}

const real: EncodeShape = { latent: 1024, codebookDim: 8, codebooks: 10, semanticSize: 4096, residualSize: 1024 };
const odd: EncodeShape = { latent: 45, codebookDim: 5, codebooks: 3, semanticSize: 7, residualSize: 11 };

export const codecQuantizeEncodeCase: KernelCase = {
  name: 'codec quantize: quantizer encode (latent → codes, margins)',
  bound: 0,
  ulps: 0,
  shapes: [
    encodeShape('real sizes', real, 6),
    encodeShape('every nearest entry tied with its copy', { ...real, codebooks: 4, repeated: true }, 5),
    encodeShape('odd sizes', odd, 4),
    encodeShape('odd sizes, tied copies', { ...odd, repeated: true }, 4),
    encodeShape('the semantic codebook alone', { ...odd, latent: 37, codebooks: 1 }, 3),
  ],
  invariance: [
    {
      label: 'frames of odd sizes',
      prepare: (seed: number, frames: number) => encodePrepared(odd, frames, (index) => streamOf(seed, index), false),
      elementsPerRow: { codes: odd.codebooks, margins: odd.codebooks },
    },
  ],
};
