// Synchronous calls into the official `tokenizers` binding, whose encode is async-only: the binding lives in a worker
// thread, the caller posts text on a MessageChannel and blocks in Atomics.wait until the worker has posted the ids
// back, then reads them with receiveMessageOnPort. Ids are int32, one per token, with no special tokens added.
import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { DramaError } from '../errors.ts';

/** Longest a single encode may take before the worker is presumed dead. */
const ENCODE_TIMEOUT_MS = 60_000;

// Plain CommonJS so that it runs the same under tsx, plain node and a bundle; the binding path comes in workerData.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { Tokenizer } = require(workerData.bindingPath);
const signal = new Int32Array(workerData.signal);
const port = workerData.port;
let tokenizer;
try {
  tokenizer = Tokenizer.fromFile(workerData.tokenizerPath);
  port.postMessage({ ready: true, vocabulary: tokenizer.getVocab(true) });
} catch (error) {
  port.postMessage({ ready: false, error: String(error && error.message ? error.message : error) });
}
port.on('message', async (text) => {
  try {
    const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
    port.postMessage({ ids: Int32Array.from(encoding.getIds()) });
  } catch (error) {
    port.postMessage({ error: String(error && error.message ? error.message : error) });
  }
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
`;

/** Resolves the native binding, or says why it cannot load (then the pure TypeScript fallback is used). */
export function loadNativeBinding(): { bindingPath: string } | { failure: string } {
  const require = createRequire(import.meta.url);
  try {
    const bindingPath = require.resolve('tokenizers');
    require(bindingPath);
    return { bindingPath };
  } catch (error) {
    return { failure: error instanceof Error ? error.message : String(error) };
  }
}

export class NativeEncoder {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal: Int32Array;
  /** Set once a reply went missing: a late reply would otherwise be read as the next call's answer. */
  private broken = false;

  private constructor(worker: Worker, port: MessagePort, signal: Int32Array) {
    this.worker = worker;
    this.port = port;
    this.signal = signal;
  }

  /** Starts the worker and returns the encoder with the full vocabulary (added tokens included). */
  static async start(
    bindingPath: string,
    tokenizerPath: string,
  ): Promise<{ encoder: NativeEncoder; vocabulary: Record<string, number> }> {
    const channel = new MessageChannel();
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { bindingPath, tokenizerPath, signal: signal.buffer, port: channel.port2 },
      transferList: [channel.port2],
    });
    worker.unref();
    const first = await new Promise<{ ready: boolean; vocabulary?: Record<string, number>; error?: string }>(
      (resolve, reject) => {
        channel.port1.once('message', resolve);
        worker.once('error', reject);
      },
    );
    if (!first.ready || first.vocabulary === undefined) {
      await worker.terminate();
      throw new DramaError('TOKENIZER_UNREADABLE', `tokenizer ${tokenizerPath} could not be loaded: ${first.error}`, {
        kind: 'bad_checkpoint',
      });
    }
    // From here on replies are read synchronously, never through the event loop.
    channel.port1.removeAllListeners('message');
    channel.port1.unref();
    return { encoder: new NativeEncoder(worker, channel.port1, signal), vocabulary: first.vocabulary };
  }

  encode(text: string): Int32Array {
    if (this.broken) {
      throw new DramaError('TOKENIZER_NO_REPLY', 'the tokenizer worker stopped answering earlier', {
        kind: 'internal',
      });
    }
    Atomics.store(this.signal, 0, 0);
    this.port.postMessage(text);
    const outcome = Atomics.wait(this.signal, 0, 0, ENCODE_TIMEOUT_MS);
    const reply = receiveMessageOnPort(this.port)?.message as { ids?: Int32Array; error?: string } | undefined;
    if (outcome === 'timed-out' || reply === undefined) {
      this.broken = true;
      throw new DramaError('TOKENIZER_NO_REPLY', `the tokenizer worker did not answer within ${ENCODE_TIMEOUT_MS} ms`, {
        kind: 'internal',
      });
    }
    if (reply.ids === undefined) {
      throw new DramaError('TOKENIZER_ENCODE_FAILED', `the tokenizer could not encode the text: ${reply.error}`, {
        kind: 'internal',
      });
    }
    return reply.ids;
  }

  async close(): Promise<void> {
    this.port.close();
    await this.worker.terminate();
  }
}
