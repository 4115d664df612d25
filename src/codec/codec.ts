// The codec on the cpu backend (MODEL.md §6): frames → 44.1 kHz PCM (whole or streamed) and reference audio → frames.
// Weights are checked against weights.ts and folded once at load; all arithmetic is float32 storage with float64 sums
// in a fixed order, so results are deterministic and a streamed decode equals one whole decode bit for bit.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostTensor } from '../checkpoint/tensor.ts';
import { readTorchCheckpoint } from '../checkpoint/torch-pth.ts';
import { DramaError } from '../errors.ts';
import type { CodecStream, Frame } from '../model/types.ts';
import type { StageObserver } from './blocks.ts';
import type { CodecConfig } from './config.ts';
import { DecodePipeline } from './decoder.ts';
import { encodeAudio } from './encoder.ts';
import { Quantizer } from './quantizer.ts';
import { ScratchArena } from './scratch.ts';
import { type CodecWeights, loadCodecWeights } from './weights.ts';

export const CODEC_FILE_NAME = 'codec.pth';

export interface CodecStreamOptions {
  /** Fill every scratch buffer with NaN before it is handed out (tests prove every output is written). */
  readonly poisonScratch?: boolean;
  /** Receives each named stage output of every push. */
  readonly observer?: StageObserver;
}

/** Frames per encode pass by default: about 1.5 s of audio, so a long reference needs little memory. */
const DEFAULT_ENCODE_CHUNK_FRAMES = 32;

export interface CodecEncodeOptions {
  /** Frames per pass (default DEFAULT_ENCODE_CHUNK_FRAMES); every chunking gives the same frames. */
  readonly chunkFrames?: number;
  /** Receives each named stage output of every pass. */
  readonly observer?: StageObserver;
  /** Receives, per frame and codebook ([F, K]), the distance gap between the nearest and second-nearest entry. */
  readonly margins?: (values: Float64Array) => void;
}

/** The codec file of a checkpoint folder or a file path; refuses a path that does not exist by name. */
export async function codecFile(path: string): Promise<string> {
  try {
    return (await stat(path)).isDirectory() ? join(path, CODEC_FILE_NAME) : path;
  } catch (error) {
    throw new DramaError('CODEC_NOT_FOUND', `codec checkpoint ${path} does not exist`, {
      kind: 'not_found',
      cause: error,
    });
  }
}

export class Codec {
  private readonly quantizer: Quantizer;

  private constructor(
    readonly config: CodecConfig,
    /** The folded weights (the CUDA codec uploads them). */
    readonly weights: CodecWeights,
  ) {
    this.quantizer = new Quantizer(weights, config);
  }

  /** Loads `codec.pth` from a checkpoint folder or a file path. */
  static async load(path: string, config: CodecConfig): Promise<Codec> {
    const file = await codecFile(path);
    return Codec.fromWeights(config, await readTorchCheckpoint(file), file);
  }

  /** Builds a codec from a state dict (as read from codec.pth or made by synthesizeCodecWeights). */
  static fromWeights(config: CodecConfig, state: ReadonlyMap<string, HostTensor>, source = 'codec weights'): Codec {
    return new Codec(config, loadCodecWeights(state, config, source));
  }

  /** Frames → frames.length × frameLength samples in [-1, 1]. */
  decode(frames: readonly Frame[], options: CodecStreamOptions = {}): Float32Array {
    return this.openStream(options).push(frames);
  }

  /** A stream that decodes frames as they arrive; each push returns exactly the new frames' samples. */
  openStream(options: CodecStreamOptions = {}): CodecStream {
    const scratch = new ScratchArena(options.poisonScratch ?? false);
    return new DecodePipeline(this.weights, this.config, this.quantizer, scratch, options.observer);
  }

  /** Mono 44.1 kHz audio → ceil(length / frameLength) frames (the tail is zero-padded to a whole frame). */
  encode(pcm44100: Float32Array, options: CodecEncodeOptions = {}): Frame[] {
    const scratch = new ScratchArena(false);
    return encodeAudio(pcm44100, this.weights, this.config, this.quantizer, scratch, {
      ...options,
      chunkFrames: options.chunkFrames ?? DEFAULT_ENCODE_CHUNK_FRAMES,
    });
  }
}
