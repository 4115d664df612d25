// Factorised vector quantisation (DAC style): codebook entries of codebookDim values, projected to the latent width by
// 1×1 convs. Decode: z = semantic.out_proj(cb[code0]) + Σ_k residual_k.out_proj(cb_k[code_k]) (residual sum first).
// Encode: per codebook, z_e = in_proj(residual); the nearest entry by L2 between L2-normalised z_e and entries; the
// straight-through value z_e + (entry − z_e) goes through out_proj and is subtracted from the residual.
// Latents are channels-first [latentDim, F]; codes per frame are [K] (code[0] semantic, code[1..] residual).
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import type { CodecConfig } from './config.ts';
import { type CodecWeights, weight } from './weights.ts';

interface Codebook {
  readonly size: number;
  /** [size, codebookDim] as stored. */
  readonly entries: Float32Array;
  /** Entries divided by their L2 norm (float32), for the nearest-entry search. [size, codebookDim] */
  readonly normalised: Float32Array;
  /** Squared norms of the normalised entries (float64). [size] */
  readonly normalisedSquares: Float64Array;
  readonly inWeight: Float32Array;
  readonly inBias: Float32Array;
  readonly outWeight: Float32Array;
  readonly outBias: Float32Array;
}

function normalise(values: Float32Array, offset: number, width: number, out: Float32Array, outOffset: number): void {
  let sumOfSquares = 0;
  for (let index = 0; index < width; index++) sumOfSquares += values[offset + index]! ** 2;
  const norm = Math.max(Math.fround(Math.sqrt(sumOfSquares)), 1e-12);
  for (let index = 0; index < width; index++) out[outOffset + index] = values[offset + index]! / norm;
}

/** Entries [size, dim] divided by their L2 norms (float32) and those rows' squared norms (float64): the search table. */
export function normalisedEntries(entries: Float32Array, size: number, dim: number) {
  const normalised = new Float32Array(size * dim);
  const squares = new Float64Array(size);
  for (let entry = 0; entry < size; entry++) {
    normalise(entries, entry * dim, dim, normalised, entry * dim);
    for (let index = 0; index < dim; index++) squares[entry]! += normalised[entry * dim + index]! ** 2;
  }
  return { normalised, squares };
}

function loadCodebook(weights: CodecWeights, prefix: string, size: number, dim: number): Codebook {
  const entries = weight(weights, `${prefix}.codebook.weight`);
  const { normalised, squares } = normalisedEntries(entries, size, dim);
  return {
    size,
    entries,
    normalised,
    normalisedSquares: squares,
    inWeight: weight(weights, `${prefix}.in_proj.weight`),
    inBias: weight(weights, `${prefix}.in_proj.bias`),
    outWeight: weight(weights, `${prefix}.out_proj.weight`),
    outBias: weight(weights, `${prefix}.out_proj.bias`),
  };
}

/** The checkpoint prefix of codebook `index` of a frame: 0 the semantic one, k ≥ 1 residual codebook k − 1. */
export function codebookPrefix(index: number): string {
  return index === 0 ? 'quantizer.semantic_quantizer.quantizers.0' : `quantizer.quantizer.quantizers.${index - 1}`;
}

/** Entries of codebook `index` of a frame. */
export function codebookSize(config: CodecConfig, index: number): number {
  return index === 0 ? config.semanticCodebookSize : config.residualCodebookSize;
}

export class Quantizer {
  /** codebooks[0] is semantic; codebooks[1..] residual. */
  private readonly codebooks: Codebook[];
  private readonly latent: number;
  private readonly dim: number;

  constructor(weights: CodecWeights, config: CodecConfig) {
    this.latent = config.latentDim;
    this.dim = config.codebookDim;
    this.codebooks = Array.from({ length: 1 + config.residualCodebooks }, (_, index) =>
      loadCodebook(weights, codebookPrefix(index), codebookSize(config, index), this.dim),
    );
  }

  /** Number of codes per frame. */
  get codebookCount(): number {
    return this.codebooks.length;
  }

  /** out_proj(entry) of one codebook for one frame, into `out` (float32, [latent]). */
  private project(codebook: Codebook, entry: Float32Array, entryOffset: number, out: Float32Array): void {
    const { latent, dim } = this;
    for (let channel = 0; channel < latent; channel++) {
      let sum = codebook.outBias[channel]!;
      for (let index = 0; index < dim; index++)
        sum += codebook.outWeight[channel * dim + index]! * entry[entryOffset + index]!;
      out[channel] = sum;
    }
  }

  /**
   * Frames → z [latent, F]; each code is clamped into its codebook's range first, as the reference vocoder does (the
   * engine refuses an out-of-range code before it gets here: src/engine/engine-codes.ts).
   */
  decode(frames: readonly Frame[], out: Float32Array): void {
    const { latent } = this;
    const rows = frames.length;
    const projected = new Float32Array(latent);
    const residual = new Float32Array(latent);
    frames.forEach((frame, row) => {
      if (frame.length !== this.codebooks.length) {
        throw new DramaError(
          'CODEC_FRAME_SIZE',
          `frame ${row} has ${frame.length} codes; the codec takes ${this.codebooks.length}`,
          { kind: 'internal' },
        );
      }
      this.codebooks.forEach((codebook, index) => {
        if (index === 0) return;
        const code = Math.min(Math.max(frame[index]!, 0), codebook.size - 1);
        this.project(codebook, codebook.entries, code * this.dim, projected);
        for (let channel = 0; channel < latent; channel++) {
          residual[channel] = index === 1 ? projected[channel]! : residual[channel]! + projected[channel]!;
        }
      });
      const semantic = this.codebooks[0]!;
      const code = Math.min(Math.max(frame[0]!, 0), semantic.size - 1);
      this.project(semantic, semantic.entries, code * this.dim, projected);
      for (let channel = 0; channel < latent; channel++) {
        out[channel * rows + row] = projected[channel]! + (this.codebooks.length > 1 ? residual[channel]! : 0);
      }
    });
  }

  /** z [latent, F] → frames; `margins` (optional, [F, K]) receives the distance gap to the second-nearest entry. */
  encode(z: Float32Array, rows: number, margins?: Float64Array): Frame[] {
    const { latent, dim } = this;
    const frames: Frame[] = [];
    const residual = new Float32Array(latent);
    const projected = new Float32Array(latent);
    const encoded = new Float32Array(dim);
    const normalised = new Float32Array(dim);
    const straightThrough = new Float32Array(dim);
    for (let row = 0; row < rows; row++) {
      const frame = new Int32Array(this.codebooks.length);
      for (let channel = 0; channel < latent; channel++) residual[channel] = z[channel * rows + row]!;
      this.codebooks.forEach((codebook, index) => {
        for (let d = 0; d < dim; d++) {
          let sum = codebook.inBias[d]!;
          for (let channel = 0; channel < latent; channel++)
            sum += codebook.inWeight[d * latent + channel]! * residual[channel]!;
          encoded[d] = sum;
        }
        normalise(encoded, 0, dim, normalised, 0);
        let encodedSquare = 0;
        for (let d = 0; d < dim; d++) encodedSquare += normalised[d]! ** 2;
        let best = 0;
        let bestDistance = Number.POSITIVE_INFINITY;
        let secondDistance = Number.POSITIVE_INFINITY;
        for (let entry = 0; entry < codebook.size; entry++) {
          let dot = 0;
          for (let d = 0; d < dim; d++) dot += normalised[d]! * codebook.normalised[entry * dim + d]!;
          const distance = encodedSquare - 2 * dot + codebook.normalisedSquares[entry]!;
          if (distance < bestDistance) {
            secondDistance = bestDistance;
            bestDistance = distance;
            best = entry;
          } else if (distance < secondDistance) {
            secondDistance = distance;
          }
        }
        frame[index] = best;
        if (margins !== undefined) margins[row * this.codebooks.length + index] = secondDistance - bestDistance;
        for (let d = 0; d < dim; d++) {
          const entryValue = codebook.entries[best * dim + d]!;
          straightThrough[d] = encoded[d]! + Math.fround(entryValue - encoded[d]!);
        }
        this.project(codebook, straightThrough, 0, projected);
        // The semantic codebook quantises z; the residual ones quantise z − semantic, then what is left after each.
        for (let channel = 0; channel < latent; channel++) residual[channel] = residual[channel]! - projected[channel]!;
      });
      frames.push(frame);
    }
    return frames;
  }
}
