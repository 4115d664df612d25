// Every lane's codec decode state on the device, one slab per stateful layer indexed by lane slot: the post-module's
// key and value rings (window rows per layer) and each causal conv's carried input rows. A fresh lane is zeros.
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import type { Allocation } from '../../backend/cuda/memory.ts';
import { transposedHistoryRows } from '../../backend/cuda/ops/codecConv.ts';
import { RESIDUAL_DILATIONS } from '../blocks.ts';
import type { CodecConfig } from '../config.ts';
import { DEPTHWISE_KERNEL } from '../convnext.ts';

/** One slab: [slots, rows, channels] fp32. */
export interface Slab {
  readonly pointer: DevicePointer;
  readonly rows: number;
  readonly channels: number;
}

export interface TransformerRings {
  readonly keys: DevicePointer;
  readonly values: DevicePointer;
}

export interface BlockHistories {
  readonly upsample: Slab;
  readonly units: readonly Slab[];
}

export interface LaneState {
  readonly slots: number;
  readonly rings: readonly TransformerRings[];
  readonly depthwise: readonly Slab[];
  readonly first: Slab;
  readonly blocks: readonly BlockHistories[];
  readonly last: Slab;
  readonly bytesPerSlot: number;
  /** Zeroes one slot's state (a fresh lane), on the context's stream. */
  clear(slot: number): void;
  free(): void;
}

/** Conv kernel of the decoder's first and last convs and its residual units' dilated convs. */
const DECODER_KERNEL = 7;

/** Device bytes of one lane's decode state. */
export function laneStateBytes(config: CodecConfig): number {
  let floats = 0;
  const post = config.postModule;
  floats += post.layers * 2 * post.window * post.heads * post.headDim;
  floats += config.quantizerFactors.length * (DEPTHWISE_KERNEL - 1) * config.latentDim;
  floats += (DECODER_KERNEL - 1) * config.latentDim;
  let width = config.decoderDim;
  for (const rate of config.decoderRates) {
    floats += transposedHistoryRows(2 * rate, rate) * width;
    for (const dilation of RESIDUAL_DILATIONS) floats += (DECODER_KERNEL - 1) * dilation * (width / 2);
    width /= 2;
  }
  floats += (DECODER_KERNEL - 1) * width;
  return floats * 4;
}

/** Floats of one lane's largest conv history slab (rows × channels): what a staged conv's carried rows need. */
export function largestHistoryFloats(config: CodecConfig): number {
  let largest = (DECODER_KERNEL - 1) * config.latentDim;
  let width = config.decoderDim;
  for (const rate of config.decoderRates) {
    largest = Math.max(largest, transposedHistoryRows(2 * rate, rate) * width);
    for (const dilation of RESIDUAL_DILATIONS)
      largest = Math.max(largest, (DECODER_KERNEL - 1) * dilation * (width / 2));
    width /= 2;
  }
  return Math.max(largest, (DECODER_KERNEL - 1) * width);
}

/** Zeroed slabs of `slots` lanes, kept so that one lane can be cleared and all of them freed. */
export class SlabAllocations {
  private readonly allocations: Allocation[] = [];
  private readonly slabs: Slab[] = [];

  constructor(
    private readonly cuda: CudaContext,
    private readonly slots: number,
  ) {}

  /** [slots, rows, channels] fp32, zeroed on the context's stream. */
  slab(rows: number, channels: number, label: string): Slab {
    const count = Math.max(this.slots * rows * channels, 1);
    const allocation = this.cuda.allocate(count * 4, label);
    this.allocations.push(allocation);
    this.cuda.driver.fillWords(allocation.pointer, 0, count, this.cuda.stream);
    const made = { pointer: allocation.pointer, rows, channels };
    this.slabs.push(made);
    return made;
  }

  /** A transformer layer's key and value rings, window rows of width each. */
  rings(window: number, width: number, label: string): TransformerRings {
    const keys = this.slab(window, width, `${label} keys`).pointer;
    const values = this.slab(window, width, `${label} values`).pointer;
    return { keys, values };
  }

  /** Zeroes one slot of every slab (a fresh lane), on the context's stream. */
  clear(slot: number): void {
    for (const { pointer, rows, channels } of this.slabs) {
      const count = rows * channels;
      if (count > 0) this.cuda.driver.fillWords(pointer + BigInt(slot * count * 4), 0, count, this.cuda.stream);
    }
  }

  free(): void {
    for (const allocation of this.allocations) allocation.free();
    this.allocations.length = 0;
  }
}

export function allocateLaneState(cuda: CudaContext, config: CodecConfig, slots: number): LaneState {
  const slabs = new SlabAllocations(cuda, slots);
  try {
    const post = config.postModule;
    const rings = Array.from({ length: post.layers }, (_, layer) =>
      slabs.rings(post.window, post.heads * post.headDim, `codec post-module layer ${layer}`),
    );
    const depthwise = config.quantizerFactors.map((_, index) =>
      slabs.slab(DEPTHWISE_KERNEL - 1, config.latentDim, `codec upsample ${index} depthwise history`),
    );
    const first = slabs.slab(DECODER_KERNEL - 1, config.latentDim, 'codec decoder first conv history');
    let width = config.decoderDim;
    const blocks = config.decoderRates.map((rate, index) => {
      const upsample = slabs.slab(
        transposedHistoryRows(2 * rate, rate),
        width,
        `codec block ${index} upsample history`,
      );
      const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
        slabs.slab((DECODER_KERNEL - 1) * dilation, width / 2, `codec block ${index} unit ${unit} history`),
      );
      width /= 2;
      return { upsample, units };
    });
    const last = slabs.slab(DECODER_KERNEL - 1, width, 'codec decoder last conv history');
    cuda.synchronize();
    return {
      slots,
      rings,
      depthwise,
      first,
      blocks,
      last,
      bytesPerSlot: laneStateBytes(config),
      clear: (slot) => slabs.clear(slot),
      free: () => slabs.free(),
    };
  } catch (error) {
    slabs.free();
    throw error;
  }
}
