// The codec encode on CUDA (MODEL.md §6, the cpu pipeline in ../encoder.ts): reference audio → frames and the
// per-frame, per-codebook distance margins, from position 0 with zero history, in passes of at most framesPerPass
// frames. Every conv history and transformer ring is carried between passes in encoder-state.ts's slabs and every
// kernel's reduction order depends on positions and sizes only, so the pass length never changes a code. Activations
// are fp32 rows [T, C]; the strided convs run as ordinary convs over rows regrouped s at a time (strided-conv.ts).
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import type { Allocation } from '../../backend/cuda/memory.ts';
import type { CodecPrecision } from '../../backend/cuda/ops/codecConv.ts';
import { codecQuantizerEncode } from '../../backend/cuda/ops/codecQuantize.ts';
import { DramaError } from '../../errors.ts';
import type { Frame } from '../../model/types.ts';
import type { CodecConfig } from '../config.ts';
import type { CodecWeights } from '../weights.ts';
import { allocateEncoderState, type EncoderState } from './encoder-state.ts';
import { type DeviceEncodeWeights, uploadEncodeWeights } from './encoder-weights.ts';
import {
  type CallTable,
  conv,
  quantizerGeometry,
  Rotation,
  runConvNeXt,
  runTransformer,
  transformerBuffers,
} from './layers.ts';

export interface CudaCodecEncoderOptions {
  /** Frames one pass encodes (memory grows with it); any value gives the same codes. */
  readonly framesPerPass: number;
  readonly precision: CodecPrecision;
  /** Fill every scratch buffer with NaN once allocated (tests prove every output is written). */
  readonly poisonScratch?: boolean;
}

export interface CudaEncoding {
  readonly frames: Frame[];
  /** [F, K]: per frame and codebook, the second-nearest entry's distance minus the nearest's (as the cpu gives). */
  readonly margins: Float64Array;
}

/**
 * Frames a reference encode takes a pass (voice cloning's): 512 holds a 23.8 s reference in one pass (the pass length
 * never changes a code; longer passes only run faster), for 912 MiB of scratch at the real codec's widths.
 */
export const REFERENCE_FRAMES_PER_PASS = 512;

/** A quiet NaN no kernel writes. */
const POISON_WORD = 0x7fa5a5a5;

/** Rows per frame and channels of every activation the encoder blocks and downsample stages write. */
function widestRowFloats(config: CodecConfig): number {
  let rowsPerFrame = config.frameLength;
  let width = config.encoderDim;
  let widest = rowsPerFrame * width;
  for (const stride of config.encoderStrides) {
    rowsPerFrame /= stride;
    width *= 2;
    widest = Math.max(widest, rowsPerFrame * width);
  }
  return Math.max(widest, rowsPerFrame * config.latentDim);
}

/** Rows per frame after the encoder blocks: where the encoder's transformer runs. */
function latentRowsPerFrame(config: CodecConfig): number {
  return config.quantizerFactors.reduce((total, factor) => total * factor, 1);
}

/** The pass scratch's buffers, in 4-byte words each: what allocateScratch allocates (and lane-bytes.ts sets aside). */
export function encoderScratchWords(config: CodecConfig, framesPerPass: number): Record<string, number> {
  const frames = framesPerPass;
  const codebooks = 1 + config.residualCodebooks;
  const encoderRows = frames * latentRowsPerFrame(config);
  const transformers = [
    { rows: encoderRows, config: config.encoderTransformer },
    { rows: frames, config: config.preModule },
  ];
  const largest = (size: (rows: number, width: number, t: (typeof transformers)[number]['config']) => number) =>
    Math.max(...transformers.map(({ rows, config: t }) => size(rows, t.heads * t.headDim, t)));
  return {
    sequences: 2 * 4,
    big0: frames * widestRowFloats(config),
    big1: frames * widestRowFloats(config),
    big2: frames * widestRowFloats(config),
    hidden: (encoderRows / config.quantizerFactors[0]!) * config.convNextHidden,
    x: largest((rows, _, t) => rows * t.dim),
    h: largest((rows, _, t) => rows * t.dim),
    normed: largest((rows, _, t) => rows * t.dim),
    qkv: largest((rows, width) => rows * 3 * width),
    attended: largest((rows, width) => rows * width),
    gateUp: largest((rows, _, t) => rows * 2 * t.intermediate),
    gated: largest((rows, _, t) => rows * t.intermediate),
    codes: frames * codebooks,
    margins: 2 * frames * codebooks,
  };
}

export class CudaCodecEncoder {
  private readonly allocations: Allocation[] = [];
  private readonly scratch: Record<string, DevicePointer> = {};
  private closed = false;

  private constructor(
    private readonly cuda: CudaContext,
    readonly config: CodecConfig,
    private readonly weights: DeviceEncodeWeights,
    private readonly state: EncoderState,
    readonly options: CudaCodecEncoderOptions,
  ) {}

  /** Uploads the weights and allocates the carried state and the pass scratch; frees all of it on failure. */
  static create(
    cuda: CudaContext,
    config: CodecConfig,
    weights: CodecWeights,
    options: CudaCodecEncoderOptions,
  ): CudaCodecEncoder {
    if (!Number.isInteger(options.framesPerPass) || options.framesPerPass < 1 || options.framesPerPass > 2048) {
      throw new DramaError(
        'CODEC_PASS_FRAMES_INVALID',
        `codec encode frames per pass must be an integer in [1, 2048], got ${options.framesPerPass}`,
      );
    }
    const device = uploadEncodeWeights(cuda, config, weights, options.precision);
    let state: EncoderState | undefined;
    try {
      state = allocateEncoderState(cuda, config);
      const encoder = new CudaCodecEncoder(cuda, config, device, state, options);
      try {
        encoder.allocateScratch();
      } catch (error) {
        for (const allocation of encoder.allocations) allocation.free();
        throw error;
      }
      return encoder;
    } catch (error) {
      state?.free();
      device.free();
      throw error;
    }
  }

  private get codebooks(): number {
    return 1 + this.config.residualCodebooks;
  }

  /** Device bytes of the weights and of the pass scratch. */
  get bytes(): { weights: number; scratch: number } {
    const scratch = this.allocations.reduce((total, allocation) => total + allocation.bytes, 0);
    return { weights: this.weights.bytes, scratch };
  }

  private allocateScratch(): void {
    const { config, options } = this;
    for (const [name, count] of Object.entries(encoderScratchWords(config, options.framesPerPass))) {
      const allocation = this.cuda.allocate(Math.max(count, 1) * 4, `codec encode ${name}`);
      this.allocations.push(allocation);
      this.scratch[name] = allocation.pointer;
      if (options.poisonScratch === true && name !== 'sequences') {
        this.cuda.driver.fillWords(allocation.pointer, POISON_WORD, Math.max(count, 1), this.cuda.stream);
      }
    }
    this.cuda.synchronize();
  }

  /** Mono 44.1 kHz audio → ceil(length / frameLength) frames (the tail zero-padded), with their margins. */
  encode(pcm: Float32Array): CudaEncoding {
    if (this.closed)
      throw new DramaError('CODEC_CLOSED', 'the CUDA codec encoder has been closed', { kind: 'internal' });
    const { frameLength } = this.config;
    const frameCount = Math.ceil(pcm.length / frameLength);
    const frames: Frame[] = [];
    const margins = new Float64Array(frameCount * this.codebooks);
    this.state.clear();
    for (let first = 0; first < frameCount; first += this.options.framesPerPass) {
      const count = Math.min(this.options.framesPerPass, frameCount - first);
      const samples = new Float32Array(count * frameLength);
      samples.set(pcm.subarray(first * frameLength, Math.min(pcm.length, (first + count) * frameLength)));
      const pass = this.encodePass(samples, first, count);
      frames.push(...pass.frames);
      margins.set(pass.margins, first * this.codebooks);
    }
    return { frames, margins };
  }

  /** One launch sequence over `count` frames starting at frame `first`; the state carries on to the next pass. */
  private encodePass(samples: Float32Array, first: number, count: number): CudaEncoding {
    const { cuda, config, weights, state, scratch } = this;
    const { precision } = weights;
    // The lane's entry (slot 0 at its position), then the flat entry every history-free conv runs over.
    const entries = Int32Array.of(0, 0, count, first, 0, 0, count, 0);
    cuda.driver.copyHostToDevice(scratch.sequences!, entries, entries.byteLength, cuda.stream);
    const table: CallTable = {
      sequences: scratch.sequences!,
      sequenceCount: 1,
      longestSequence: count,
      frames: count,
      flat: scratch.sequences! + 16n,
    };
    const rotation = new Rotation([scratch.big0!, scratch.big1!, scratch.big2!]);
    const buffers = transformerBuffers(scratch);
    let x = scratch.big0!;
    cuda.driver.copyHostToDevice(x, samples, samples.byteLength, cuda.stream);
    let rowScale = config.frameLength;
    const widened = rotation.other(x);
    conv(cuda, table, rowScale, weights.first, precision, { out: widened, x, history: state.first });
    x = widened;
    weights.blocks.forEach((block, index) => {
      const histories = state.blocks[index]!;
      block.units.forEach((unit, unitIndex) => {
        const mixed = rotation.other(x);
        conv(cuda, table, rowScale, unit.dilated, precision, {
          out: mixed,
          x,
          alpha: unit.firstAlpha,
          history: histories.units[unitIndex]!,
          dilation: unit.dilation,
        });
        const out = rotation.other(x, mixed);
        conv(cuda, table, rowScale, unit.pointwise, precision, { out, x: mixed, alpha: unit.secondAlpha, residual: x });
        x = out;
      });
      // The down conv reads the same bytes as rows regrouped `stride` at a time.
      rowScale /= block.stride;
      const down = rotation.other(x);
      conv(cuda, table, rowScale, block.down, precision, {
        out: down,
        x,
        alpha: block.downAlpha,
        history: histories.down,
      });
      x = down;
      if (block.transformer !== undefined) {
        const out = rotation.other(x);
        runTransformer(cuda, table, rowScale, block.transformer, histories.rings, precision, x, out, buffers);
        x = out;
      }
    });
    const tail = rotation.other(x);
    conv(cuda, table, rowScale, weights.tail, precision, {
      out: tail,
      x,
      alpha: weights.tailAlpha,
      history: state.tail,
    });
    x = tail;
    weights.downsamples.forEach((stage, index) => {
      rowScale /= stage.factor;
      const down = rotation.other(x);
      conv(cuda, table, rowScale, stage.down, precision, { out: down, x });
      x = runConvNeXt(
        cuda,
        table,
        rowScale,
        stage,
        state.depthwise[index]!,
        precision,
        down,
        rotation,
        scratch.hidden!,
      );
    });
    const latent = rotation.other(x);
    runTransformer(cuda, table, 1, weights.preModule, state.preModule, precision, x, latent, buffers);
    const codebooks = this.codebooks;
    codecQuantizerEncode(cuda, {
      codes: scratch.codes!,
      margins: scratch.margins!,
      z: latent,
      frames: count,
      ...quantizerGeometry(config),
      ...weights.quantizer,
    });
    const codes = cuda.download(scratch.codes!, new Int32Array(count * codebooks));
    const margins = cuda.download(scratch.margins!, new Float64Array(count * codebooks));
    const frames = Array.from({ length: count }, (_, frame) => codes.slice(frame * codebooks, (frame + 1) * codebooks));
    return { frames, margins };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cuda.synchronize();
    for (const allocation of this.allocations) allocation.free();
    this.state.free();
    this.weights.free();
  }
}
