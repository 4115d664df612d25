// Every response_format through the real `openai` client, read chunk by chunk from a chunked stream: each reply
// decodes (audio-decode) and lasts frames × 2048 / 44100 s (the null engine's frame count is in X-Output-Frames).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import decodeAudio from 'audio-decode';
import { joinBytes, readChunks, startTestServer, type TestServer } from './support.ts';

let server: TestServer;
let expectedSeconds = 0;
before(async () => {
  server = await startTestServer();
  const whole = await server.client.audio.speech
    .create({ model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'pcm', seed: 2 } as never)
    .asResponse();
  expectedSeconds = (Number(whole.headers.get('x-output-frames')) * 2048) / 44100;
});
after(() => server.close());

const INPUT = 'Formats, formats and more formats for every client.';

// Lossy codecs add priming and padding samples; lossless ones must match to the sample.
const CASES = [
  { format: 'wav', rate: 44100, tolerance: 0 },
  { format: 'flac', rate: 44100, tolerance: 0 },
  { format: 'mp3', rate: 44100, tolerance: 0.08 },
  { format: 'opus', rate: 48000, tolerance: 0.08 },
  { format: 'aac', rate: 44100, tolerance: 0.1 },
] as const;

for (const { format, rate, tolerance } of CASES) {
  test(`${format}: streamed chunk by chunk, decodes to the expected duration`, async () => {
    const response = await server.client.audio.speech
      .create({
        model: 'drama3',
        voice: 'alloy',
        input: INPUT,
        response_format: format,
        stream_format: 'audio',
        seed: 2,
      } as never)
      .asResponse();
    assert.equal(response.status, 200);
    const chunks = await readChunks(response.body!);
    const decoded = await decodeAudio(joinBytes(chunks));
    const seconds = decoded.channelData[0]!.length / decoded.sampleRate;
    assert.equal(decoded.sampleRate, rate);
    assert.ok(
      Math.abs(seconds - expectedSeconds) <= tolerance + 1e-6,
      `${format}: ${seconds} s decoded, ${expectedSeconds} s expected`,
    );
  });
}
