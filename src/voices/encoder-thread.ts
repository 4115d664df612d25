// The host side of the voice encoder's thread (encoder-worker.ts): started on the first upload, one message per
// upload, answers matched by id. If the thread dies, the uploads in flight fail by name and the next one starts a
// new thread. The thread does not keep the process alive.
import type { Worker } from 'node:worker_threads';
import type { CodecPrecision } from '../backend/cuda/ops/codecConvArguments.ts';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { deserializeError, type SerializedError } from '../threads/serialize-error.ts';
import { startTypeScriptWorker } from '../threads/start-worker.ts';

/** Where the checkpoint's reference encode runs: the cpu codec, or the CUDA encoder at a precision. */
export type VoiceEncodeDevice =
  | { readonly backend: 'cpu' }
  | { readonly backend: 'cuda'; readonly precision: CodecPrecision };

/** Where a runtime's frames come from, as the voice encoder needs it: the null runtime, or a checkpoint folder. */
export type VoiceEncoderSource =
  | { readonly kind: 'null' }
  | { readonly kind: 'checkpoint'; readonly dir: string; readonly device?: VoiceEncodeDevice };

export interface EncodedUpload {
  readonly frames: Frame[];
  /** Extension for the stored file, from its sniffed format. */
  readonly extension: string;
}

type Answer = { id: number; upload: EncodedUpload } | { id: number; error: SerializedError };

export class EncoderThread {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (upload: EncodedUpload) => void; reject: (error: Error) => void }
  >();

  constructor(private readonly runtime: VoiceEncoderSource) {}

  encode(audio: Uint8Array, text: string): Promise<EncodedUpload> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, audio, text });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = startTypeScriptWorker(new URL('./encoder-worker.ts', import.meta.url), { spec: this.runtime });
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const waiting = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if ('error' in answer) waiting?.reject(deserializeError(answer.error));
      else waiting?.resolve(answer.upload);
    });
    const fail = (reason: string) => {
      if (this.worker === worker) this.worker = undefined;
      const error = new DramaError('VOICE_ENCODER_FAILED', `the voice encoder thread stopped: ${reason}`, {
        kind: 'internal',
      });
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
    };
    worker.on('error', (error) => fail(error.message));
    worker.on('exit', (code) => fail(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }
}
