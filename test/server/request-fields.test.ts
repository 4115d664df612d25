// Field conversions: reference audio as base64 or a data URL (and the refusals), API keys from a file.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadApiKeys } from '../../src/server/auth.ts';
import { decodeReferenceAudio, MAX_REFERENCE_BYTES } from '../../src/server/request-fields.ts';

test('reference audio: plain base64 and base64 data URLs give the same bytes', () => {
  const bytes = Buffer.from('RIFF....WAVEfmt ', 'latin1');
  const base64 = bytes.toString('base64');
  assert.deepEqual(Buffer.from(decodeReferenceAudio(base64, 'audio')), bytes);
  assert.deepEqual(Buffer.from(decodeReferenceAudio(`data:audio/wav;base64,${base64}`, 'audio')), bytes);
  assert.deepEqual(Buffer.from(decodeReferenceAudio(`${base64.slice(0, 8)}\n${base64.slice(8)}`, 'audio')), bytes);
});

test('reference audio: a data URL without base64, text that is not base64, and oversized audio are refused', () => {
  assert.throws(() => decodeReferenceAudio('data:audio/wav,RIFF', 'references[0].audio'), {
    code: 'REFERENCE_AUDIO_INVALID',
    param: 'references[0].audio',
  });
  assert.throws(() => decodeReferenceAudio('%%%not-base64%%%', 'audio'), { code: 'REFERENCE_AUDIO_INVALID' });
  const huge = Buffer.alloc(MAX_REFERENCE_BYTES + 3).toString('base64');
  assert.throws(() => decodeReferenceAudio(huge, 'audio'), { code: 'REFERENCE_AUDIO_TOO_LARGE', kind: 'too_large' });
});

test('API keys come from flags and from a file, one a line, skipping blanks and comments', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-keys-'));
  try {
    const file = join(folder, 'keys');
    await writeFile(file, '# team keys\nkey-one\n\n  key-two  \n');
    assert.deepEqual(loadApiKeys(['flag-key'], file), ['flag-key', 'key-one', 'key-two']);
    assert.deepEqual(loadApiKeys([], undefined), []);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
