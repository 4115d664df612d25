// Device bytes the CUDA codec's contexts take before they are made, so that the lane budget can set them aside beside
// the lanes on the same device: the decoder's weights and call scratch, the reference encoder's weights, state and
// pass scratch. The weights and states are sized by running the same uploads and allocations against a context that
// only counts (the conv weights' re-layouts and fp16 conversions are skipped, nothing reaches a device); the scratch
// by the size tables the allocations use.
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { Allocation } from '../../backend/cuda/memory.ts';
import type { CodecPrecision } from '../../backend/cuda/ops/codecConvArguments.ts';
import type { CodecConfig } from '../config.ts';
import type { CodecWeights } from '../weights.ts';
import { decoderScratchWords } from './decoder.ts';
import { uploadDecodeWeights } from './device-weights.ts';
import { encoderScratchWords } from './encoder.ts';
import { allocateEncoderState } from './encoder-state.ts';
import { uploadEncodeWeights } from './encoder-weights.ts';

/** A context whose uploads and allocations are only counted: what the weight uploads and state slabs call. */
function countingContext(): { cuda: CudaContext; bytes: () => number } {
  let total = 0;
  const allocation = (bytes: number, label: string): Allocation => {
    total += bytes;
    return { kind: 'device', pointer: 0n, bytes, label, free: () => {} };
  };
  const cuda = {
    allocate: allocation,
    upload: (values: ArrayBufferView, label: string) => allocation(Math.max(values.byteLength, 1), label),
    driver: { fillWords: () => {} },
    stream: 0n,
    synchronize: () => {},
  } as unknown as CudaContext;
  return { cuda, bytes: () => total };
}

/** Zero weights of these shapes, views of one buffer: the counting uploads read lengths, so the file's bytes wait. */
export function zeroWeights(shapes: ReadonlyMap<string, readonly number[]>): CodecWeights {
  const lengths = [...shapes].map(([name, shape]) => [name, shape.reduce((total, size) => total * size, 1)] as const);
  const buffer = new ArrayBuffer(4 * Math.max(0, ...lengths.map(([, length]) => length)));
  return new Map(lengths.map(([name, length]) => [name, new Float32Array(buffer, 0, length)]));
}

/** Bytes of a scratch table as its allocations ask for them (the encoder's allocate at least one word each). */
function words(table: Record<string, number>, atLeastOne: boolean): number {
  return Object.values(table).reduce((sum, count) => sum + (atLeastOne ? Math.max(count, 1) : count) * 4, 0);
}

/** The decoder's weights and call scratch (its lane state is counted per stream, lane-bytes.ts). */
export function decoderDeviceBytes(
  config: CodecConfig,
  weights: CodecWeights,
  options: {
    readonly slots: number;
    readonly maxFramesPerCall: number;
    readonly precision: CodecPrecision;
    readonly stageInputs?: boolean;
  },
): { weights: number; scratch: number } {
  const counting = countingContext();
  uploadDecodeWeights(counting.cuda, config, weights, options.precision, true);
  return { weights: counting.bytes(), scratch: words(decoderScratchWords(config, options), false) };
}

/** The reference encoder's weights and carried state (together) and its pass scratch. */
export function encoderDeviceBytes(
  config: CodecConfig,
  weights: CodecWeights,
  options: { readonly framesPerPass: number; readonly precision: CodecPrecision },
): { weights: number; scratch: number } {
  const counting = countingContext();
  uploadEncodeWeights(counting.cuda, config, weights, options.precision, true);
  allocateEncoderState(counting.cuda, config);
  return { weights: counting.bytes(), scratch: words(encoderScratchWords(config, options.framesPerPass), true) };
}
