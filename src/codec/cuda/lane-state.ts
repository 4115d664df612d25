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

export function allocateLaneState(cuda: CudaContext, config: CodecConfig, slots: number): LaneState {
  const allocations: Allocation[] = [];
  const slabs: Slab[] = [];
  const free = () => {
    for (const allocation of allocations) allocation.free();
    allocations.length = 0;
  };
  const floats = (count: number, label: string) => {
    const allocation = cuda.allocate(Math.max(count, 1) * 4, label);
    allocations.push(allocation);
    cuda.driver.fillWords(allocation.pointer, 0, Math.max(count, 1), cuda.stream);
    return allocation.pointer;
  };
  const slab = (rows: number, channels: number, label: string): Slab => {
    const made = { pointer: floats(slots * rows * channels, label), rows, channels };
    slabs.push(made);
    return made;
  };
  try {
    const post = config.postModule;
    const ringFloats = slots * post.window * post.heads * post.headDim;
    const rings = Array.from({ length: post.layers }, (_, layer) => {
      const keys = floats(ringFloats, `codec post-module layer ${layer} keys`);
      const values = floats(ringFloats, `codec post-module layer ${layer} values`);
      slabs.push({ pointer: keys, rows: post.window, channels: post.heads * post.headDim });
      slabs.push({ pointer: values, rows: post.window, channels: post.heads * post.headDim });
      return { keys, values };
    });
    const depthwise = config.quantizerFactors.map((_, index) =>
      slab(DEPTHWISE_KERNEL - 1, config.latentDim, `codec upsample ${index} depthwise history`),
    );
    const first = slab(DECODER_KERNEL - 1, config.latentDim, 'codec decoder first conv history');
    let width = config.decoderDim;
    const blocks = config.decoderRates.map((rate, index) => {
      const upsample = slab(transposedHistoryRows(2 * rate, rate), width, `codec block ${index} upsample history`);
      const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
        slab((DECODER_KERNEL - 1) * dilation, width / 2, `codec block ${index} unit ${unit} history`),
      );
      width /= 2;
      return { upsample, units };
    });
    const last = slab(DECODER_KERNEL - 1, width, 'codec decoder last conv history');
    cuda.synchronize();
    return {
      slots,
      rings,
      depthwise,
      first,
      blocks,
      last,
      bytesPerSlot: laneStateBytes(config),
      clear(slot) {
        for (const { pointer, rows, channels } of slabs) {
          const count = rows * channels;
          if (count > 0) cuda.driver.fillWords(pointer + BigInt(slot * count * 4), 0, count, cuda.stream);
        }
      },
      free,
    };
  } catch (error) {
    free();
    throw error;
  }
}
