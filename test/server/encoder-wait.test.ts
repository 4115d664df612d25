// An encoder whose last bytes come from another thread (AAC's worker) is awaited, never waited on: while one reply's
// encoder finalises, the server keeps answering others. Blocking the event loop there (a shared-flag wait) stalled
// every connection for as long as the encoder thread took, seconds under load.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import type { AudioToolkit } from '../../src/server/audio-output.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';
import { send } from '../fuzz/support/http-client.ts';
import { jsonRequest, SPEECH_PATH } from '../fuzz/support/requests.ts';
import { startTestServer } from './support.ts';

/** How long the slow encoder takes to finalise: far longer than answering /health takes. */
const FINALISE_MS = 1500;

let finishing: () => void = () => {};
const slowFinish: AudioToolkit = {
  ...audioToolkit,
  async createEncoder(format, sampleRate) {
    const encoder = await createAudioEncoder(format, { sampleRate });
    const slow = {
      streamable: encoder.streamable,
      push: (pcm: Float32Array) => encoder.push(pcm),
      abort: () => encoder.abort(),
      // The synchronous way blocks this thread as a wait on another thread does.
      finish() {
        finishing();
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, FINALISE_MS);
        return encoder.finish();
      },
      async finishAsync() {
        finishing();
        await new Promise((resolve) => setTimeout(resolve, FINALISE_MS));
        return encoder.finishAsync();
      },
    };
    return slow;
  },
};

const server = await startTestServer({ app: { audio: slowFinish } });
after(() => server.close());

test('a reply whose encoder is finalising does not hold up the others', async () => {
  const order: string[] = [];
  let health: Promise<unknown> = Promise.resolve();
  finishing = () => {
    health = send(server.url, { method: 'GET', path: '/health' }).then((reply) => order.push(`health ${reply.status}`));
  };
  const speech = await send(server.url, jsonRequest(SPEECH_PATH, { input: 'Hello there.', response_format: 'wav' }));
  order.push(`speech ${speech.status}`);
  await health;
  assert.deepEqual(order, ['health 200', 'speech 200'], 'health waited for the encoder of another reply');
});
