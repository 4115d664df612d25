// Entry of a synthesis thread: answers each `{ id, spec, seed, residualGain }` with `{ id, weight, scale? }` (the
// tensors initialTensors draws, their buffers handed over, not copied) or `{ id, error }`.
import { parentPort } from 'node:worker_threads';
import type { HostTensor } from '../checkpoint/tensor.ts';
import type { TensorSpec } from '../model/weights.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { initialTensors } from './init.ts';

export interface TensorJob {
  readonly id: number;
  readonly spec: TensorSpec;
  readonly seed: number;
  readonly residualGain: number;
}

export type TensorAnswer =
  | { readonly id: number; readonly weight: HostTensor; readonly scale?: HostTensor }
  | { readonly id: number; readonly error: ReturnType<typeof serializeError> };

const port = parentPort!;

port.on('message', ({ id, spec, seed, residualGain }: TensorJob) => {
  try {
    const { weight, scale } = initialTensors(spec, seed, residualGain);
    const buffers = [weight, scale].flatMap((tensor) =>
      tensor === undefined ? [] : [tensor.data.buffer as ArrayBuffer],
    );
    port.postMessage({ id, weight, scale } satisfies TensorAnswer, buffers);
  } catch (error) {
    port.postMessage({ id, error: serializeError(error) } satisfies TensorAnswer);
  }
});
