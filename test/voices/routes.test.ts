// The voices routes on the null engine with a real catalog folder: upload (multipart), list, get, delete; a voice
// name in /v1/audio/speech and reference_id in /v1/tts resolve through the catalog; unknown names are 404, never the
// default voice; bad audio, a too-large file, a duplicate name, path tricks and a non-multipart body get named errors.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openVoices } from '../../src/cli/voices.ts';
import { MAX_VOICE_AUDIO_BYTES } from '../../src/voices/names.ts';
import { startTestServer, type TestServer } from '../server/support.ts';
import { toneWav } from './wav-fixture.ts';

let dir: string;
let server: TestServer;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'drama3-voices-'));
  server = await startTestServer({ app: await openVoices(dir, { kind: 'null' }) });
});
after(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function upload(fields: Record<string, string>, audio?: Uint8Array): Promise<Response> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  if (audio !== undefined) form.append('audio', new Blob([audio], { type: 'audio/wav' }), 'voice.wav');
  return fetch(`${server.url}/v1/audio/voices`, { method: 'POST', body: form });
}

async function errorOf(response: Response): Promise<{ status: number; code: string; param: string | null }> {
  const body = (await response.json()) as { error: { code: string; param: string | null } };
  return { status: response.status, code: body.error.code, param: body.error.param };
}

function speak(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: 'Hello there.', response_format: 'pcm', seed: 3, ...body }),
  });
}

test('upload, list, get and speak with a voice; it changes the audio; delete makes it unknown', async () => {
  const created = await upload({ name: 'alice', text: 'Hello, I am Alice.' }, toneWav(1));
  assert.equal(created.status, 201);
  const voice = (await created.json()) as { id: string; frames: number; ref_text: string };
  assert.equal(voice.id, 'alice');
  assert.equal(voice.ref_text, 'Hello, I am Alice.');
  assert.equal(voice.frames, 21, '1 s at 44.1 kHz is 21 whole frames of 2048 samples');

  const listed = (await (await fetch(`${server.url}/v1/audio/voices`)).json()) as { voices: { id: string }[] };
  assert.deepEqual(
    listed.voices.map((item) => item.id),
    ['alice'],
  );
  const one = (await (await fetch(`${server.url}/v1/audio/voices/alice`)).json()) as { name: string };
  assert.equal(one.name, 'alice');

  const withVoice = await speak({ voice: 'alice' });
  const withObject = await speak({ voice: { id: 'alice' } });
  const plain = await speak({ voice: 'alloy' });
  assert.deepEqual([withVoice.status, withObject.status, plain.status], [200, 200, 200]);
  const voiced = Buffer.from(await withVoice.arrayBuffer());
  assert.ok(voiced.equals(Buffer.from(await withObject.arrayBuffer())));
  assert.ok(!voiced.equals(Buffer.from(await plain.arrayBuffer())), 'the voice is not the default voice');

  const fish = await fetch(`${server.url}/v1/tts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Hello there.', reference_id: 'alice', format: 'wav', seed: 3 }),
  });
  assert.equal(fish.status, 200);

  const deleted = await fetch(`${server.url}/v1/audio/voices/alice`, { method: 'DELETE' });
  assert.deepEqual(await deleted.json(), { id: 'alice', deleted: true });
  assert.deepEqual(await errorOf(await speak({ voice: 'alice' })), {
    status: 404,
    code: 'VOICE_NOT_FOUND',
    param: 'voice',
  });
  assert.deepEqual(await readdir(dir), []);
});

test('unknown voices are 404 on every route, never the default voice', async () => {
  assert.deepEqual(await errorOf(await speak({ voice: 'nobody' })), {
    status: 404,
    code: 'VOICE_NOT_FOUND',
    param: 'voice',
  });
  const fish = await fetch(`${server.url}/v1/tts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Hi.', reference_id: 'nobody' }),
  });
  assert.equal((await errorOf(fish)).code, 'VOICE_NOT_FOUND');
  const get = await errorOf(await fetch(`${server.url}/v1/audio/voices/nobody`));
  assert.deepEqual(get, { status: 404, code: 'VOICE_NOT_FOUND', param: 'id' });
  const remove = await errorOf(await fetch(`${server.url}/v1/audio/voices/nobody`, { method: 'DELETE' }));
  assert.equal(remove.status, 404);
});

test('bad audio, too large, duplicate, path tricks and malformed uploads get named errors', async () => {
  const wav = toneWav(0.5);
  assert.equal((await upload({ name: 'bob', text: 'Bob here.' }, wav)).status, 201);
  const cases: [Promise<Response>, number, string, string | null][] = [
    [upload({ name: 'bob', text: 'Again.' }, wav), 409, 'VOICE_EXISTS', 'name'],
    [upload({ name: '../x', text: 'Sneaky.' }, wav), 400, 'VOICE_NAME_INVALID', 'name'],
    [upload({ name: 'noise', text: 'Noise.' }, new Uint8Array(4000).fill(7)), 400, 'AUDIO_UNKNOWN_FORMAT', 'audio'],
    [upload({ name: 'cut', text: 'Cut.' }, wav.subarray(0, 30)), 400, 'AUDIO_TRUNCATED', 'audio'],
    [
      upload({ name: 'big', text: 'Big.' }, new Uint8Array(MAX_VOICE_AUDIO_BYTES + 1)),
      413,
      'VOICE_AUDIO_TOO_LARGE',
      'audio',
    ],
    [upload({ name: 'quiet', text: 'Short.' }, toneWav(0.01)), 400, 'VOICE_AUDIO_TOO_SHORT', 'audio'],
    [upload({ name: 'endless', text: 'Long.' }, toneWav(100, 8000)), 400, 'VOICE_AUDIO_TOO_LONG', 'audio'],
    [upload({ name: 'mute' }, wav), 400, 'MISSING_FIELD', 'text'],
    [upload({ name: 'silent', text: 'No file.' }), 400, 'MISSING_FIELD', 'audio'],
    [upload({ name: 'x', text: 'T.', speaker: '1' }, wav), 400, 'UNKNOWN_FIELD', 'speaker'],
    [upload({ name: 'x', text: 'T.', overwrite: 'yes' }, wav), 400, 'INVALID_FIELD', 'overwrite'],
    [
      fetch(`${server.url}/v1/audio/voices`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"json"}',
      }),
      400,
      'VOICE_UPLOAD_NOT_MULTIPART',
      'body',
    ],
  ];
  for (const [response, status, code, param] of cases) {
    const error = await errorOf(await response);
    assert.deepEqual(error, { status, code, param }, code);
  }
  const replaced = await upload({ name: 'bob', text: 'Bob again.', overwrite: 'true' }, wav);
  assert.equal(replaced.status, 201);
  assert.deepEqual(await readdir(dir), ['bob'], 'refused uploads leave nothing behind');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /^drama3_voices 1$/m);
  assert.match(metrics, /^drama3_reference_cache_hits_total 0$/m);
});
