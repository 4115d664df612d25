// Bodies that used to get through or crash: malformed multipart is a 400 with a code (never a 500), a transcript
// holding structural tokens is refused at upload (so no stored voice fails every later request), and msgpack binary
// is accepted only where the schema wants bytes (reference audio) and refused by name anywhere else.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { openVoices } from '../../src/cli/voices.ts';
import { toneWav } from '../voices/wav-fixture.ts';
import { startTestServer, type TestServer } from './support.ts';

let dir: string;
let server: TestServer;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'drama3-bodies-'));
  server = await startTestServer({ app: await openVoices(dir, { kind: 'null' }) });
});
after(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const BOUNDARY = 'drama3boundary';

function multipart(raw: string, contentType = `multipart/form-data; boundary=${BOUNDARY}`) {
  return server.app.inject({
    method: 'POST',
    url: '/v1/audio/voices',
    headers: { 'content-type': contentType },
    payload: raw,
  });
}

const field = (name: string, value: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;

const MALFORMED = [
  {
    name: 'a body cut off inside a part',
    raw: `${field('name', 'x')}--${BOUNDARY}\r\nContent-Disposition: form-data; name="text"\r\n\r\nhal`,
  },
  { name: 'a part without headers', raw: `--${BOUNDARY}\r\n\r\nvalue\r\n--${BOUNDARY}--\r\n` },
  { name: 'no boundary parameter', raw: field('name', 'x'), contentType: 'multipart/form-data' },
  { name: 'a header line without a colon', raw: `--${BOUNDARY}\r\nnot a header\r\n\r\nx\r\n--${BOUNDARY}--\r\n` },
];

for (const bad of MALFORMED) {
  test(`malformed multipart (${bad.name}) is a 400 with a code`, async () => {
    const response = await multipart(bad.raw, bad.contentType);
    assert.equal(response.statusCode, 400, response.body);
    assert.match(response.json().error.code, /^VOICE_UPLOAD_|^MISSING_FIELD$/);
    assert.deepEqual(await readdir(dir), []);
  });
}

test('a transcript with structural tokens is refused at upload, and nothing is stored', async () => {
  const form = new FormData();
  form.append('name', 'tricky');
  form.append('text', 'Hello <|im_start|> there');
  form.append('audio', new Blob([toneWav(0.5)], { type: 'audio/wav' }), 'voice.wav');
  const response = await fetch(`${server.url}/v1/audio/voices`, { method: 'POST', body: form });
  assert.equal(response.status, 400);
  const body = (await response.json()) as { error: { code: string; param: string } };
  assert.equal(body.error.code, 'TEXT_STRUCTURAL_TOKEN');
  assert.equal(body.error.param, 'text');
  assert.deepEqual(await readdir(dir), []);
});

function tts(body: unknown) {
  return server.app.inject({
    method: 'POST',
    url: '/v1/tts',
    headers: { 'content-type': 'application/msgpack' },
    payload: Buffer.from(encode(body)),
  });
}

test('msgpack binary where text belongs is refused by name, not spoken as base64', async () => {
  const inText = await tts({ text: new TextEncoder().encode('spoken bytes'), format: 'pcm' });
  assert.equal(inText.statusCode, 400, inText.body);
  assert.equal(inText.json().error.code, 'BINARY_NOT_ALLOWED');
  assert.equal(inText.json().error.param, 'text');
  const inTranscript = await tts({
    text: 'hi',
    format: 'pcm',
    references: [{ audio: toneWav(0.5), text: new Uint8Array([104, 105]) }],
  });
  assert.equal(inTranscript.statusCode, 400);
  assert.equal(inTranscript.json().error.param, 'references[0].text');
});

test('msgpack binary reference audio is taken as the reference bytes', async () => {
  const response = await tts({
    text: 'hi',
    format: 'pcm',
    max_new_tokens: 2,
    references: [{ audio: toneWav(0.5), text: 'a tone' }],
  });
  assert.equal(response.statusCode, 200, response.body);
});
