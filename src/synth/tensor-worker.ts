// Entry of a synthesis thread: answers each `{ id, spec, seed, residualGain }` with `{ id, weight, scale? }` (the
// tensors initialTensors draws) and each `{ id, codec, seed }` with `{ id, codec }` (synthesizeCodecWeights), their
// buffers handed over, not copied; or with `{ id, error }`.
import { parentPort } from 'node:worker_threads';
import type { HostTensor } from '../checkpoint/tensor.ts';
import type { CodecConfig } from '../codec/config.ts';
import { synthesizeCodecWeights } from '../codec/synth-weights.ts';
import type { TensorSpec } from '../model/weights.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { initialTensors } from './init.ts';

export interface TensorJob {
  readonly id: number;
  readonly spec: TensorSpec;
  readonly seed: number;
  readonly residualGain: number;
}

export interface CodecJob {
  readonly id: number;
  readonly codec: CodecConfig;
  readonly seed: number;
}

export type TensorAnswer =
  | { readonly id: number; readonly weight: HostTensor; readonly scale?: HostTensor }
  | { readonly id: number; readonly codec: Map<string, HostTensor> }
  | { readonly id: number; readonly error: ReturnType<typeof serializeError> };

const buffersOf = (tensors: Iterable<HostTensor | undefined>): ArrayBuffer[] =>
  [...tensors].flatMap((tensor) => (tensor === undefined ? [] : [tensor.data.buffer as ArrayBuffer]));

function answer(job: TensorJob | CodecJob): [TensorAnswer, ArrayBuffer[]] {
  if ('codec' in job) {
    const codec = synthesizeCodecWeights(job.codec, job.seed);
    return [{ id: job.id, codec }, buffersOf(codec.values())];
  }
  const { weight, scale } = initialTensors(job.spec, job.seed, job.residualGain);
  return [{ id: job.id, weight, scale }, buffersOf([weight, scale])];
}

const port = parentPort!;

port.on('message', (job: TensorJob | CodecJob) => {
  try {
    port.postMessage(...answer(job));
  } catch (error) {
    port.postMessage({ id: job.id, error: serializeError(error) } satisfies TensorAnswer);
  }
});
