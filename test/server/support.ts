// Starts a server on the null engine (in-thread, fast) on a free port, and WAV/PCM checks shared by the tests.
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../../src/engine/engine-core.ts';
import type { NullDeviceOptions } from '../../src/engine/load-runtime.ts';
import type { NullCodecOptions } from '../../src/engine/null-codec.ts';
import type { NullModelOptions } from '../../src/engine/null-model.ts';
import { type AppOptions, buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';

export interface TestServer {
  readonly app: FastifyInstance;
  readonly engine: Engine;
  readonly url: string;
  readonly client: OpenAI;
  close(): Promise<void>;
}

export async function startTestServer(
  options: {
    settings?: Partial<EngineSettings>;
    model?: NullModelOptions;
    codec?: NullCodecOptions;
    device?: NullDeviceOptions;
    queueLimit?: number;
    thread?: 'inline' | 'worker';
    app?: Partial<AppOptions>;
  } = {},
): Promise<TestServer> {
  const engine = await Engine.start({
    runtime: { kind: 'null', model: options.model ?? {}, codec: options.codec, device: options.device },
    settings: { ...DEFAULT_ENGINE_SETTINGS, ...options.settings },
    queueLimit: options.queueLimit ?? 4,
    thread: options.thread ?? 'inline',
  });
  const app = await buildApp({ engine, audio: audioToolkit, ...options.app });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'test-key', maxRetries: 0 });
  return { app, engine, url: address, client, close: () => app.close() };
}

/** Reads a stream chunk by chunk; returns the chunks. */
export async function readChunks(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

export function joinBytes(chunks: readonly Uint8Array[]): Buffer {
  return Buffer.concat(chunks.map((chunk) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
}

/** Samples of the torchaudio-length resample of `frames` frames from 44100 Hz to `rate`. */
export function expectedSamples(frames: number, rate: number): number {
  return Math.ceil((frames * 2048 * rate) / 44100);
}
