// The codec decode on CUDA for many lanes at once (MODEL.md §6, the cpu pipeline in ../decoder.ts): each call takes
// the pending frames of every lane that has them, decodes them in one launch sequence at their absolute positions,
// and returns each lane's samples. Every lane's state lives in slabs by slot (lane-state.ts), and every kernel's
// reduction order depends on positions and sizes only, so a lane's samples do not depend on how its frames were
// chunked or which lanes shared its calls: streamed = whole, bit for bit.
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import type { Allocation } from '../../backend/cuda/memory.ts';
import type { CodecPrecision } from '../../backend/cuda/ops/codecConv.ts';
import { codecQuantizerDecode } from '../../backend/cuda/ops/codecRows.ts';
import { launchesObserved } from '../../backend/cuda/ops/launch.ts';
import { StepGraphs } from '../../backend/cuda/step-graphs.ts';
import { DramaError } from '../../errors.ts';
import type { CodecStream, Frame } from '../../model/types.ts';
import type { CodecConfig } from '../config.ts';
import type { CodecWeights } from '../weights.ts';
import { type DeviceDecodeWeights, uploadDecodeWeights } from './device-weights.ts';
import { allocateLaneState, type LaneState, largestHistoryFloats } from './lane-state.ts';
import {
  type CallTable,
  conv,
  quantizerGeometry,
  Rotation,
  runDecoderBlock,
  runResample,
  runTransformer,
  transformerBuffers,
} from './layers.ts';

export interface CudaCodecOptions {
  /** Lanes that can hold a stream at once. */
  readonly slots: number;
  /** Frames one launch sequence decodes, all lanes together; larger calls are split (same samples either way). */
  readonly maxFramesPerCall: number;
  readonly precision: CodecPrecision;
  /** Fill every scratch buffer with NaN once allocated (tests prove every output is written). */
  readonly poisonScratch?: boolean;
  /**
   * `f16`: stage each tensor-core conv's inputs once a layer (codec_conv_stage_f16) rather than in every block; the
   * same bits either way. Default: on, unless DRAMA3_CODEC_STAGED=off (benchmarks compare both).
   */
  readonly stageInputs?: boolean;
}

/** Whether the `f16` convs stage their inputs once a layer (CudaCodecOptions.stageInputs). */
function stagesInputs(options: Pick<CudaCodecOptions, 'precision' | 'stageInputs'>): boolean {
  return options.precision === 'f16' && (options.stageInputs ?? process.env.DRAMA3_CODEC_STAGED !== 'off');
}

/** One lane's new frames in a call. */
export interface LaneFrames {
  readonly slot: number;
  readonly frames: readonly Frame[];
}

/** A quiet NaN no kernel writes. */
const POISON_WORD = 0x7fa5a5a5;

/** Calls of at most this many frames replay as graphs, of at most this many shapes (the rest launch directly). */
const GRAPH_MAXIMUM_FRAMES = 16;
const GRAPH_MAXIMUM_SHAPES = 32;

/** Room for the split tensor-core convs' sums: a frame's widest, 24 groups × 8 rows × 6144 outputs, four times over. */
const SPLIT_SUM_FLOATS = 8 * 1024 * 1024;

/** Rows per frame and channels of every activation the decode writes, for the scratch size. */
function widestRowFloats(config: CodecConfig): number {
  let rowsPerFrame = 1;
  let widest = Math.max(config.latentDim, config.postModule.dim);
  for (const factor of [...config.quantizerFactors].reverse()) {
    rowsPerFrame *= factor;
    widest = Math.max(widest, rowsPerFrame * config.latentDim);
  }
  let width = config.decoderDim;
  widest = Math.max(widest, rowsPerFrame * width);
  for (const rate of config.decoderRates) {
    rowsPerFrame *= rate;
    width /= 2;
    widest = Math.max(widest, rowsPerFrame * width);
  }
  return widest;
}

function latentRowsPerFrame(config: CodecConfig): number {
  return config.quantizerFactors.reduce((total, factor) => total * factor, 1);
}

/** The call scratch's buffers, in 4-byte words each: what allocateScratch allocates (and lane-bytes.ts sets aside). */
export function decoderScratchWords(
  config: CodecConfig,
  options: Pick<CudaCodecOptions, 'slots' | 'maxFramesPerCall' | 'precision' | 'stageInputs'>,
): Record<string, number> {
  const frames = options.maxFramesPerCall;
  const post = config.postModule;
  const width = post.heads * post.headDim;
  const latentRows = frames * latentRowsPerFrame(config);
  const buffers = {
    sequences: (options.slots + 1) * 4,
    codes: frames * (1 + config.residualCodebooks),
    big0: frames * widestRowFloats(config),
    big1: frames * widestRowFloats(config),
    big2: frames * widestRowFloats(config),
    hidden: latentRows * config.convNextHidden,
    samples: frames * config.frameLength,
    x: frames * post.dim,
    h: frames * post.dim,
    normed: frames * post.dim,
    qkv: frames * 3 * width,
    attended: frames * width,
    gateUp: frames * 2 * post.intermediate,
    gated: frames * post.intermediate,
    // The split tensor-core convs' sums (layers.ts): only calls of few rows split, and theirs fit.
    ...(options.precision === 'f16' ? { splitSums: SPLIT_SUM_FLOATS } : {}),
  };
  if (!stagesInputs(options)) return buffers;
  // Every conv reads one of the activation buffers above: its rows in fp16, Cin rounded up to 8, fit in half the
  // largest one's words plus 7 channels of the most rows a call has (a frame's samples); each lane's carried rows,
  // rounded up likewise, in its largest history slab's words.
  const { sequences: _table, codes: _codes, samples: _samples, splitSums: _sums, ...activations } = buffers;
  const rowHalfs = Math.max(...Object.values(activations)) + 7 * frames * config.frameLength;
  return { ...buffers, stagedInputs: Math.ceil(rowHalfs / 2) + options.slots * largestHistoryFloats(config) };
}

export class CudaCodecDecoder {
  private readonly positions: number[];
  private readonly open: boolean[];
  private readonly allocations: Allocation[] = [];
  private readonly scratch: Record<string, DevicePointer> = {};
  private readonly table: Int32Array;
  private readonly codes: Int32Array;
  /** Small calls' launch sequences by call shape; the allocations never change after create. */
  private readonly graphs: StepGraphs;
  /** The call scratch's buffers and their sizes in 4-byte words (decoderScratchWords). */
  private readonly scratchWords: Record<string, number>;
  private closed = false;

  private constructor(
    private readonly cuda: CudaContext,
    readonly config: CodecConfig,
    private readonly weights: DeviceDecodeWeights,
    private readonly state: LaneState,
    readonly options: CudaCodecOptions,
  ) {
    this.positions = new Array<number>(options.slots).fill(0);
    this.open = new Array<boolean>(options.slots).fill(false);
    this.table = new Int32Array((options.slots + 1) * 4);
    this.codes = new Int32Array(options.maxFramesPerCall * this.codebooks);
    this.graphs = new StepGraphs(cuda, () => 0);
    this.scratchWords = decoderScratchWords(config, options);
  }

  /** Uploads the weights and allocates every lane's state and the call scratch; frees all of it on failure. */
  static create(
    cuda: CudaContext,
    config: CodecConfig,
    weights: CodecWeights,
    options: CudaCodecOptions,
  ): CudaCodecDecoder {
    if (!Number.isInteger(options.slots) || options.slots < 1 || options.slots > 65535) {
      throw new DramaError('CODEC_SLOTS_INVALID', `codec slots must be an integer in [1, 65535], got ${options.slots}`);
    }
    if (!Number.isInteger(options.maxFramesPerCall) || options.maxFramesPerCall < 1) {
      throw new DramaError(
        'CODEC_CALL_FRAMES_INVALID',
        `codec frames per call must be a positive integer, got ${options.maxFramesPerCall}`,
      );
    }
    const device = uploadDecodeWeights(cuda, config, weights, options.precision);
    let state: LaneState | undefined;
    let decoder: CudaCodecDecoder | undefined;
    try {
      state = allocateLaneState(cuda, config, options.slots);
      decoder = new CudaCodecDecoder(cuda, config, device, state, options);
      decoder.allocateScratch();
      decoder.warmFirstFrame();
      return decoder;
    } catch (error) {
      if (decoder !== undefined) decoder.close();
      else {
        state?.free();
        device.free();
      }
      throw error;
    }
  }

  /**
   * Decodes one frame of zero codes on a slot and gives the slot back (the next stream on it starts from zero state),
   * so that the first frame of the first request replays a recorded graph instead of recording one.
   */
  private warmFirstFrame(): void {
    const slot = this.acquire();
    this.decode([{ slot, frames: [new Int32Array(this.codebooks)] }]);
    this.release(slot);
  }

  private get codebooks(): number {
    return 1 + this.config.residualCodebooks;
  }

  /** Device bytes of the weights, one lane's state and the call scratch. */
  get bytes(): { weights: number; perSlot: number; scratch: number } {
    const scratch = this.allocations.reduce((total, allocation) => total + allocation.bytes, 0);
    return { weights: this.weights.bytes, perSlot: this.state.bytesPerSlot, scratch };
  }

  private allocateScratch(): void {
    for (const [name, count] of Object.entries(this.scratchWords)) {
      const allocation = this.cuda.allocate(count * 4, `codec decode ${name}`);
      this.allocations.push(allocation);
      this.scratch[name] = allocation.pointer;
      if (this.options.poisonScratch === true && name !== 'sequences' && name !== 'codes') {
        this.cuda.driver.fillWords(allocation.pointer, POISON_WORD, count, this.cuda.stream);
      }
    }
    this.cuda.synchronize();
  }

  /** Claims a free slot with fresh (zero) state, or refuses when every slot holds a stream. */
  acquire(): number {
    const slot = this.open.indexOf(false);
    if (slot < 0) {
      throw new DramaError('CODEC_SLOTS_EXHAUSTED', `all ${this.options.slots} codec lanes are streaming`, {
        kind: 'overloaded',
      });
    }
    this.open[slot] = true;
    this.positions[slot] = 0;
    this.state.clear(slot);
    return slot;
  }

  release(slot: number): void {
    this.open[slot] = false;
  }

  /** A stream on a fresh slot; `close` gives the slot back. */
  openStream(): CodecStream & { close(): void } {
    const slot = this.acquire();
    return {
      push: (frames) => this.decode([{ slot, frames }])[0]!,
      close: () => this.release(slot),
    };
  }

  /**
   * Decodes each lane's new frames (at most one entry per slot), in calls of at most maxFramesPerCall frames; returns
   * each entry's frames.length × frameLength samples.
   */
  decode(lanes: readonly LaneFrames[]): Float32Array[] {
    if (this.closed) throw new DramaError('CODEC_CLOSED', 'the CUDA codec has been closed', { kind: 'internal' });
    const seen = new Set<number>();
    for (const { slot, frames } of lanes) {
      if (!this.open[slot]) {
        throw new DramaError('CODEC_SLOT_NOT_OPEN', `codec slot ${slot} holds no stream`, { kind: 'internal' });
      }
      if (seen.has(slot)) {
        throw new DramaError('CODEC_SLOT_TWICE', `codec slot ${slot} appears twice in one call`, { kind: 'internal' });
      }
      seen.add(slot);
      for (const frame of frames) {
        if (frame.length !== this.codebooks) {
          throw new DramaError(
            'CODEC_FRAME_SIZE',
            `a frame has ${frame.length} codes; the codec takes ${this.codebooks}`,
            { kind: 'internal' },
          );
        }
      }
    }
    const { frameLength } = this.config;
    const outputs = lanes.map(({ frames }) => new Float32Array(frames.length * frameLength));
    const done = lanes.map(() => 0);
    for (;;) {
      // Fill one call: every lane with frames left takes what fits, in lane order.
      const entries: { lane: number; from: number; count: number }[] = [];
      let budget = this.options.maxFramesPerCall;
      lanes.forEach(({ frames }, lane) => {
        const left = frames.length - done[lane]!;
        if (left === 0 || budget === 0) return;
        const count = Math.min(left, budget);
        entries.push({ lane, from: done[lane]!, count });
        budget -= count;
      });
      if (entries.length === 0) break;
      this.decodeCall(
        entries.map(({ lane, from, count }) => ({
          slot: lanes[lane]!.slot,
          frames: lanes[lane]!.frames.slice(from, from + count),
        })),
        entries.map(({ lane, from }) => outputs[lane]!.subarray(from * frameLength)),
      );
      for (const { lane, count } of entries) done[lane]! += count;
    }
    return outputs;
  }

  /** One launch sequence over lanes whose frames fit one call; writes each lane's samples into `into`. */
  private decodeCall(lanes: readonly LaneFrames[], into: readonly Float32Array[]): void {
    const { cuda, config, scratch } = this;
    const codebooks = this.codebooks;
    let frames = 0;
    let longest = 0;
    lanes.forEach(({ slot, frames: laneFrames }, index) => {
      this.table.set([slot, frames, laneFrames.length, this.positions[slot]!], index * 4);
      for (const frame of laneFrames) {
        this.codes.set(frame, frames * codebooks);
        frames++;
      }
      longest = Math.max(longest, laneFrames.length);
    });
    // The flat table (every lane's rows as one sequence) sits after the lanes' entries.
    this.table.set([0, 0, frames, 0], lanes.length * 4);
    cuda.driver.copyHostToDevice(scratch.sequences!, this.table, (lanes.length + 1) * 16, cuda.stream);
    cuda.driver.copyHostToDevice(scratch.codes!, this.codes, frames * codebooks * 4, cuda.stream);
    const table: CallTable = {
      sequences: scratch.sequences!,
      sequenceCount: lanes.length,
      longestSequence: longest,
      frames,
      flat: scratch.sequences! + BigInt(lanes.length * 16),
      ...(scratch.splitSums === undefined
        ? {}
        : { splitSums: { pointer: scratch.splitSums, bytes: SPLIT_SUM_FLOATS * 4 } }),
      ...(scratch.stagedInputs === undefined
        ? {}
        : { stagedInputs: { pointer: scratch.stagedInputs, bytes: this.scratchWords.stagedInputs! * 4 } }),
    };
    // A call of few frames costs more to launch from the host than to run: its launches replay as one graph per
    // call shape (the table's contents, copied above, are the only thing that changes between calls of a shape).
    const key = `${lanes.length} lanes, longest ${longest}, ${frames} frames`;
    const replayable = frames <= GRAPH_MAXIMUM_FRAMES && !launchesObserved();
    if (replayable && (this.graphs.has(key) || this.graphs.size < GRAPH_MAXIMUM_SHAPES)) {
      this.graphs.run(key, () => this.enqueueCall(table, frames));
    } else {
      this.enqueueCall(table, frames);
    }
    const samples = cuda.download(scratch.samples!, new Float32Array(frames * config.frameLength));
    let offset = 0;
    lanes.forEach(({ slot, frames: laneFrames }, index) => {
      const count = laneFrames.length * config.frameLength;
      into[index]!.set(samples.subarray(offset, offset + count));
      offset += count;
      this.positions[slot]! += laneFrames.length;
    });
  }

  /** The call's launch sequence: everything it reads is on the device (weights, state, scratch, the table). */
  private enqueueCall(table: CallTable, frames: number): void {
    const { cuda, config, weights, state, scratch } = this;
    const precision = weights.precision;
    const rotation = new Rotation([scratch.big0!, scratch.big1!, scratch.big2!]);
    codecQuantizerDecode(cuda, {
      out: scratch.x!,
      codes: scratch.codes!,
      frames,
      ...quantizerGeometry(config),
      ...weights.quantizer,
    });
    // The quantizer's output is the post-module's input and then its layers' output buffer.
    let x = scratch.big0!;
    runTransformer(
      cuda,
      table,
      1,
      weights.postModule,
      state.rings,
      precision,
      scratch.x!,
      x,
      transformerBuffers(scratch),
    );
    let rowScale = 1;
    weights.resamples.forEach((stage, index) => {
      x = runResample(cuda, table, rowScale, stage, state.depthwise[index]!, precision, x, rotation, scratch.hidden!);
      rowScale *= stage.factor;
    });
    const first = rotation.other(x);
    conv(cuda, table, rowScale, weights.first, precision, { out: first, x, history: state.first });
    x = first;
    weights.blocks.forEach((block, index) => {
      x = runDecoderBlock(cuda, table, rowScale, block, state.blocks[index]!, precision, x, rotation);
      rowScale *= block.rate;
    });
    conv(cuda, table, rowScale, weights.last, precision, {
      out: scratch.samples!,
      x,
      alpha: weights.lastAlpha,
      history: state.last,
      activation: 'tanh',
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cuda.synchronize();
    this.graphs.release();
    for (const allocation of this.allocations) allocation.free();
    this.state.free();
    this.weights.free();
  }
}
