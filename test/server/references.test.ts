// One-off references: the count limit (one constant, the schema's and the prompt's) is checked before anything is
// decoded; a reference too short to encode is refused as a catalog upload is; and encoding a long reference happens
// in the voice encoder's thread, so a concurrent request's audio keeps flowing meanwhile.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { concatBytes } from '../../src/audio/pcm.ts';
import { writeWav } from '../../src/audio/wav.ts';
import { DEFAULT_TEXT_LIMITS } from '../../src/text/limits.ts';
import { type VoiceEncoder, voiceEncoderFor } from '../../src/voices/encoder.ts';
import { startTestServer, type TestServer } from './support.ts';

const encoder = voiceEncoderFor({ kind: 'null' });
let encodes = 0;
const counting: VoiceEncoder = {
  encode: (audio, text) => {
    encodes += 1;
    return encoder.encode(audio, text);
  },
  close: () => encoder.close(),
};
const NARRATOR = { text: 'A stored voice.', frames: [new Int32Array(10)], voice: 'narrator' };

let server: TestServer;
before(async () => {
  server = await startTestServer({
    model: { framesPerRow: 1000, stepMilliseconds: 8, contextRows: 16384 },
    app: {
      referenceEncoder: counting,
      resolveVoice: async (name) => (name === 'narrator' ? [NARRATOR] : name === 'default' ? [] : undefined),
    },
  });
});
after(async () => {
  await server.close();
  await encoder.close();
});

const base64Wav = (seconds: number, rate = 22050) =>
  Buffer.from(
    writeWav(
      Float32Array.from({ length: Math.round(seconds * rate) }, (_, index) => 0.3 * Math.sin(index / 7)),
      rate,
    ),
  ).toString('base64');

async function speak(
  body: object,
): Promise<{ status: number; body: Buffer; json: () => { error: { code: string; param: string } } }> {
  const response = await server.app.inject({ method: 'POST', url: '/v1/audio/speech', payload: body });
  return { status: response.statusCode, body: response.rawPayload, json: () => response.json() };
}

test('the schema takes as many references as the prompt builder, and not one more, before decoding any', async () => {
  assert.equal(DEFAULT_TEXT_LIMITS.maxReferences, 4);
  const reference = { audio: base64Wav(0.5), text: 'a tone' };
  encodes = 0;
  const five = await speak({ input: 'hi', response_format: 'pcm', references: Array(5).fill(reference) });
  assert.equal(five.status, 400);
  assert.equal(five.json().error.param, 'references');
  const withVoice = await speak({
    input: 'hi',
    response_format: 'pcm',
    voice: 'narrator',
    references: Array(4).fill(reference),
  });
  assert.equal(withVoice.status, 400);
  assert.equal(withVoice.json().error.code, 'TOO_MANY_REFERENCES');
  assert.equal(encodes, 0, 'audio was decoded before the count was checked');
  const four = await speak({
    input: 'hi',
    response_format: 'pcm',
    max_frames: 3,
    references: Array(4).fill(reference),
  });
  assert.equal(four.status, 200, four.body.toString());
  assert.equal(encodes, 4);
});

test('a one-off reference shorter than one frame is refused as a catalog upload is', async () => {
  const short = await speak({
    input: 'hi',
    response_format: 'pcm',
    references: [{ audio: base64Wav(0.01), text: 'too short' }],
  });
  assert.equal(short.status, 400);
  assert.equal(short.json().error.code, 'VOICE_AUDIO_TOO_SHORT');
  assert.equal(short.json().error.param, 'references[0].audio');
  const structural = await speak({
    input: 'hi',
    response_format: 'pcm',
    references: [{ audio: base64Wav(0.5), text: 'a <|im_start|> b' }],
  });
  assert.equal(structural.status, 400);
  assert.equal(structural.json().error.param, 'references[0].text');
});

test("encoding a long reference does not hold up a concurrent request's audio", async () => {
  // Small bodies that are long to decode and resample: 90 s of 16 kHz mp3, three times.
  const mp3 = await createAudioEncoder('mp3', { sampleRate: 16000, bitrate: 32000 });
  const tone = Float32Array.from({ length: 16000 * 90 }, (_, index) => 0.3 * Math.sin(index / 7));
  const longMp3 = Buffer.from(concatBytes([mp3.push(tone), mp3.finish()])).toString('base64');
  const post = (body: object) =>
    fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const streaming = await post({
    input: 'keep talking',
    response_format: 'pcm',
    stream_format: 'audio',
    max_frames: 1000,
  });
  const reader = streaming.body!.getReader();
  const arrivals: number[] = [];
  await reader.read();
  arrivals.push(performance.now());
  const sent = performance.now();
  const long = post({
    input: 'hi',
    response_format: 'pcm',
    max_frames: 2,
    references: Array(3).fill({ audio: longMp3, text: 'long' }),
  });
  let encoded = 0;
  void long.then(() => {
    encoded = performance.now();
  });
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
    arrivals.push(performance.now());
  }
  const answer = await long;
  assert.equal(answer.status, 200, await answer.clone().text());
  assert.ok(encoded > 0, 'the stream ended before the references were encoded');
  const encodeMs = encoded - sent;
  const gaps = arrivals.flatMap((time, index) =>
    index > 0 && time > sent && arrivals[index - 1]! < encoded ? [time - arrivals[index - 1]!] : [],
  );
  const longestGap = Math.max(0, ...gaps);
  assert.ok(gaps.length > 5, `only ${gaps.length} chunks arrived while the references were encoded`);
  // Encoded in this thread, the stream stops for about the whole encode; in the encoder's thread it keeps going.
  assert.ok(
    longestGap < encodeMs / 2,
    `the concurrent stream stalled ${longestGap.toFixed(0)} ms while ${encodeMs.toFixed(0)} ms of references encoded`,
  );
});
