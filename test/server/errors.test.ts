// Contract 7 over HTTP: every bad request gets its status and OpenAI's error envelope naming the problem, and the
// server answers a good request right after each one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { startTestServer, type TestServer } from './support.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ app: { bodyLimit: 64 * 1024 } });
});
after(() => server.close());

const GOOD = { input: 'hello there', response_format: 'pcm', seed: 1 };

interface BadCase {
  readonly name: string;
  readonly status: number;
  readonly code: string;
  readonly param?: string | null;
  readonly body?: unknown;
  readonly raw?: string | Buffer;
  readonly contentType?: string;
  readonly url?: string;
  readonly method?: 'GET' | 'POST';
}

const CASES: BadCase[] = [
  { name: 'missing input', status: 400, code: 'MISSING_FIELD', param: 'input', body: { voice: 'alloy' } },
  { name: 'input of the wrong type', status: 400, code: 'INVALID_FIELD', param: 'input', body: { ...GOOD, input: 42 } },
  { name: 'empty input', status: 400, code: 'INVALID_FIELD', param: 'input', body: { ...GOOD, input: '' } },
  {
    name: 'oversized input',
    status: 400,
    code: 'INPUT_TOO_LONG',
    param: 'input',
    body: { ...GOOD, input: 'a'.repeat(4097) },
  },
  { name: 'unknown field', status: 400, code: 'UNKNOWN_FIELD', param: 'foo', body: { ...GOOD, foo: 1 } },
  {
    name: 'unknown nested field',
    status: 400,
    code: 'UNKNOWN_FIELD',
    param: 'references[0].speaker',
    body: { ...GOOD, references: [{ audio: 'AAAA', text: 'x', speaker: 1 }] },
  },
  {
    name: 'structural token in input',
    status: 400,
    code: 'TEXT_STRUCTURAL_TOKEN',
    param: 'input',
    body: { ...GOOD, input: 'hi <|im_start|>' },
  },
  {
    name: 'structural token in instructions',
    status: 400,
    code: 'TEXT_STRUCTURAL_TOKEN',
    param: 'instructions',
    body: { ...GOOD, input: 'hi', instructions: 'be <|voice|>' },
  },
  {
    name: 'zero max_frames',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'max_frames',
    body: { ...GOOD, max_frames: 0 },
  },
  {
    name: 'max_frames over the server limit',
    status: 400,
    code: 'FRAME_LIMIT_EXCEEDED',
    param: 'max_frames',
    body: { ...GOOD, max_frames: 5000 },
  },
  {
    name: 'max_frames overflowing the context',
    status: 400,
    code: 'CONTEXT_OVERFLOW',
    param: 'max_frames',
    body: { ...GOOD, max_frames: 4090 },
  },
  { name: 'speed below 0.25', status: 400, code: 'INVALID_FIELD', param: 'speed', body: { ...GOOD, speed: 0.1 } },
  { name: 'speed out of range', status: 400, code: 'INVALID_FIELD', param: 'speed', body: { ...GOOD, speed: 10 } },
  {
    name: 'speed of the wrong type',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'speed',
    body: { ...GOOD, speed: 'fast' },
  },
  {
    name: 'unknown response_format',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'response_format',
    body: { ...GOOD, response_format: 'ogg' },
  },
  {
    name: 'unknown stream_format',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'stream_format',
    body: { ...GOOD, stream_format: 'chunks' },
  },
  {
    name: 'negative temperature',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'temperature',
    body: { ...GOOD, temperature: -1 },
  },
  { name: 'top_p above 1', status: 400, code: 'INVALID_FIELD', param: 'top_p', body: { ...GOOD, top_p: 2 } },
  { name: 'fractional top_k', status: 400, code: 'INVALID_FIELD', param: 'top_k', body: { ...GOOD, top_k: 1.5 } },
  { name: 'negative seed', status: 400, code: 'INVALID_FIELD', param: 'seed', body: { ...GOOD, seed: -1 } },
  {
    name: 'sample_rate too low',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'sample_rate',
    body: { ...GOOD, sample_rate: 1000 },
  },
  {
    name: 'stream of the wrong type',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'stream',
    body: { ...GOOD, stream: 'yes' },
  },
  { name: 'malformed JSON', status: 400, code: 'MALFORMED_JSON', param: 'body', raw: '{"input": "hi",' },
  { name: 'a JSON array body', status: 400, code: 'INVALID_FIELD', param: 'body', raw: '[1, 2]' },
  {
    name: 'plain-text content type',
    status: 415,
    code: 'UNSUPPORTED_CONTENT_TYPE',
    param: 'content-type',
    raw: 'hello',
    contentType: 'text/plain',
  },
  {
    name: 'xml content type',
    status: 415,
    code: 'UNSUPPORTED_CONTENT_TYPE',
    raw: '<a/>',
    contentType: 'application/xml',
  },
  { name: 'huge body', status: 413, code: 'BODY_TOO_LARGE', body: { input: 'a'.repeat(70 * 1024) } },
  { name: 'unknown voice', status: 404, code: 'VOICE_NOT_FOUND', param: 'voice', body: { ...GOOD, voice: 'nobody' } },
  {
    name: 'reference audio that is not base64',
    status: 400,
    code: 'REFERENCE_AUDIO_INVALID',
    param: 'references[0].audio',
    body: { ...GOOD, references: [{ audio: 'not base64!', text: 'x' }] },
  },
  {
    name: 'references on a server without a codec encoder',
    status: 400,
    code: 'REFERENCES_UNSUPPORTED',
    param: 'references',
    body: { ...GOOD, references: [{ audio: 'UklGRg==', text: 'x' }] },
  },
  {
    name: 'fish: unknown reference_id',
    status: 404,
    code: 'VOICE_NOT_FOUND',
    param: 'reference_id',
    url: '/v1/tts',
    body: { text: 'hi', reference_id: 'ghost' },
  },
  {
    name: 'fish: chunk_length out of range',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'chunk_length',
    url: '/v1/tts',
    body: { text: 'hi', chunk_length: 5 },
  },
  {
    name: 'fish: malformed msgpack',
    status: 400,
    code: 'MALFORMED_MSGPACK',
    param: 'body',
    url: '/v1/tts',
    raw: Buffer.from([0xc1, 0xff]),
    contentType: 'application/msgpack',
  },
  {
    name: 'fish: text over the limit',
    status: 400,
    code: 'INPUT_TOO_LONG',
    param: 'text',
    url: '/v1/tts',
    body: { text: 'a'.repeat(4097), format: 'pcm' },
  },
  {
    name: 'fish: impossible max_new_tokens',
    status: 400,
    code: 'FRAME_LIMIT_EXCEEDED',
    param: 'max_new_tokens',
    url: '/v1/tts',
    body: { text: 'hi', format: 'pcm', max_new_tokens: 5000 },
  },
  {
    name: 'unknown field in the voice object',
    status: 400,
    code: 'UNKNOWN_FIELD',
    param: 'voice.extra',
    body: { ...GOOD, voice: { id: 'alloy', extra: 1 } },
  },
  {
    name: 'fish: prosody volume out of range',
    status: 400,
    code: 'INVALID_FIELD',
    param: 'prosody.volume',
    url: '/v1/tts',
    body: { text: 'hi', format: 'pcm', prosody: { speed: 1, volume: 100 } },
  },
  { name: 'unknown route', status: 404, code: 'ROUTE_NOT_FOUND', url: '/v1/nothing', method: 'GET' },
  { name: 'GET on the speech route', status: 405, code: 'METHOD_NOT_ALLOWED', method: 'GET' },
];

test(`${CASES.length} bad requests each get their status and the OpenAI envelope; good requests still work`, async () => {
  assert.ok(CASES.length >= 25);
  for (const bad of CASES) {
    const response = await server.app.inject({
      method: bad.method ?? 'POST',
      url: bad.url ?? '/v1/audio/speech',
      headers: { 'content-type': bad.contentType ?? 'application/json' },
      ...(bad.method === 'GET' ? {} : { payload: bad.raw ?? JSON.stringify(bad.body) }),
    });
    assert.equal(response.statusCode, bad.status, `${bad.name}: ${response.body}`);
    const body = response.json() as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(body), ['error'], bad.name);
    assert.equal(body.error.code, bad.code, `${bad.name}: ${response.body}`);
    assert.equal(typeof body.error.message, 'string');
    assert.equal(typeof body.error.type, 'string');
    if (bad.param !== undefined) assert.equal(body.error.param, bad.param, `${bad.name}: ${response.body}`);
    const good = await server.app.inject({ method: 'POST', url: '/v1/audio/speech', payload: GOOD });
    assert.equal(good.statusCode, 200, `good request after ${bad.name}`);
  }
});

test('the numbers are named: context overflow message', async () => {
  const response = await server.app.inject({
    method: 'POST',
    url: '/v1/audio/speech',
    payload: { ...GOOD, max_frames: 4090 },
  });
  assert.match(
    response.json().error.message,
    /prompt rows 19 \+ max_frames 4090 \+ 1 = 4110 exceeds the context window of 4096 rows/,
  );
});

test('fish /v1/tts takes the body the Fish SDK sends by default, and names what it ignores', async () => {
  const response = await server.app.inject({
    method: 'POST',
    url: '/v1/tts',
    headers: { 'content-type': 'application/msgpack' },
    payload: Buffer.from(
      encode({
        text: 'hello there',
        chunk_length: 200,
        format: 'pcm',
        mp3_bitrate: 128,
        opus_bitrate: -1000,
        references: [],
        reference_id: null,
        normalize: true,
        latency: 'normal',
        sample_rate: 24000,
        prosody: null,
        top_p: 0.7,
        temperature: 0.7,
        repetition_penalty: 1.2,
        max_new_tokens: 1024,
        streaming: false,
        seed: null,
        use_memory_cache: 'off',
      }),
    ),
  });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(response.headers['x-sample-rate'], '24000');
  assert.equal(response.headers['x-ignored-fields'], 'repetition_penalty');
  const frames = Number(response.headers['x-output-frames']);
  assert.equal(response.rawPayload.length / 2, Math.ceil((frames * 2048 * 24000) / 44100));
});

test('fish prosody is honoured: speed 2 halves the samples, volume -6 dB halves the amplitude', async () => {
  const speak = (prosody: object | null) =>
    server.app.inject({
      method: 'POST',
      url: '/v1/tts',
      payload: { text: 'prosody check', format: 'pcm', seed: 3, prosody },
    });
  const plain = await speak(null);
  const shaped = await speak({ speed: 2, volume: -6 });
  assert.equal(shaped.statusCode, 200, shaped.body);
  const samples = (reply: typeof plain) =>
    new Int16Array(reply.rawPayload.buffer, reply.rawPayload.byteOffset, reply.rawPayload.length / 2);
  const peak = (values: Int16Array) => values.reduce((max, value) => Math.max(max, Math.abs(value)), 0);
  assert.equal(samples(shaped).length, Math.round(samples(plain).length / 2));
  const ratio = peak(samples(shaped)) / peak(samples(plain));
  assert.ok(Math.abs(ratio - 10 ** (-6 / 20)) < 0.03, `peak ratio ${ratio}`);
});

test('fish /v1/tts speaks from a msgpack body', async () => {
  const response = await server.app.inject({
    method: 'POST',
    url: '/v1/tts',
    headers: { 'content-type': 'application/msgpack' },
    payload: Buffer.from(encode({ text: 'hello there', format: 'pcm', seed: 1, normalize: true, latency: 'normal' })),
  });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['x-sample-rate'], '44100');
  assert.equal(response.rawPayload.length, Number(response.headers['x-output-frames']) * 2048 * 2);
});

test('API keys: missing or wrong key is 401 in the envelope; the right key passes; /health stays open', async () => {
  const keyed = await startTestServer({ app: { apiKeys: ['secret-1'] } });
  try {
    const missing = await keyed.app.inject({ method: 'POST', url: '/v1/audio/speech', payload: GOOD });
    assert.equal(missing.statusCode, 401);
    assert.equal(missing.json().error.code, 'INVALID_API_KEY');
    assert.equal(missing.headers['www-authenticate'], 'Bearer');
    const wrong = await keyed.app.inject({
      method: 'GET',
      url: '/v1/models',
      headers: { authorization: 'Bearer nope' },
    });
    assert.equal(wrong.statusCode, 401);
    const right = await keyed.app.inject({
      method: 'GET',
      url: '/v1/models',
      headers: { authorization: 'Bearer secret-1' },
    });
    assert.equal(right.statusCode, 200);
    assert.equal((await keyed.app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  } finally {
    await keyed.close();
  }
});

test('a known path with another method is 405 with the methods it takes; an unknown path stays 404', async () => {
  const cases = [
    { method: 'GET', url: '/v1/audio/speech?x=1', allow: 'POST' },
    { method: 'PUT', url: '/v1/tts', allow: 'POST' },
    { method: 'POST', url: '/v1/audio/voices/some-voice', allow: 'DELETE, GET, HEAD' },
  ] as const;
  for (const { method, url, allow } of cases) {
    const response = await server.app.inject({ method, url });
    assert.equal(response.statusCode, 405, `${method} ${url}: ${response.body}`);
    assert.equal(response.headers.allow, allow, `${method} ${url}`);
    const body = response.json() as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'METHOD_NOT_ALLOWED');
    assert.match(body.error.message, new RegExp(`^${method} is not allowed on [^ ?]+; use ${allow}$`));
  }
  const unknown = await server.app.inject({ method: 'PUT', url: '/v1/audio/voices/a/b' });
  assert.equal(unknown.statusCode, 404, unknown.body);
  assert.equal(unknown.headers.allow, undefined);
});

test('a 415 names the content type sent and the ones the route takes', async () => {
  const cases = [
    { url: '/v1/audio/speech', type: 'text/plain', takes: 'application/json' },
    { url: '/v1/tts', type: 'application/xml', takes: 'application/json or application/msgpack' },
    { url: '/v1/audio/voices', type: 'text/plain', takes: 'multipart/form-data' },
  ];
  for (const { url, type, takes } of cases) {
    const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload: 'x' });
    assert.equal(response.statusCode, 415, `${url}: ${response.body}`);
    const { error } = response.json() as { error: { message: string } };
    assert.equal(error.message, `content type '${type}' is not accepted on ${url}; send ${takes}`);
  }
});
