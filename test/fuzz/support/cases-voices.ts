// Table cases for the voices routes: a voice's life (upload, clash, overwrite, get, delete, gone), and multipart
// uploads that are incomplete, malformed, oversize, of bad audio or with names that try to leave the folder. Cases run
// in order: later ones rely on what earlier ones stored or removed.
import { toneWav } from '../../voices/wav-fixture.ts';
import { type HttpCase, refused } from './case.ts';
import { BOUNDARY, multipartBody, multipartRequest, type Part, VOICES_PATH } from './requests.ts';

const audio = (bytes: Uint8Array = toneWav(1)): Part => ({ name: 'audio', value: bytes, filename: 'voice.wav' });
const fields = (name: string, text = 'A transcript of the voice.'): Part[] => [
  { name: 'name', value: name },
  { name: 'text', value: text },
];

function voiceJson(name: string): (body: Buffer) => string[] {
  return (body) => {
    const voice = JSON.parse(body.toString()) as Record<string, unknown>;
    const keys = Object.keys(voice).sort().join();
    if (keys !== 'created_at,frames,id,name,ref_text') return [`voice keys ${keys}`];
    if (voice.id !== name || typeof voice.frames !== 'number' || voice.frames < 1) return [`voice ${body}`];
    return [];
  };
}

function uploadRefused(
  name: string,
  parts: readonly Part[] | Buffer,
  status: number,
  code: string,
  param?: string,
): HttpCase {
  return { name: `upload: ${name}`, request: multipartRequest(parts), expect: refused(status, code, param) };
}

function get(path: string, method = 'GET') {
  return { method, path };
}

function lifecycle(): HttpCase[] {
  const name = 'fuzz-life';
  return [
    {
      name: 'upload a voice',
      request: multipartRequest([...fields(name), audio()]),
      expect: { ok: 201, check: voiceJson(name) },
    },
    uploadRefused('the same name again', [...fields(name), audio()], 409, 'VOICE_EXISTS', 'name'),
    {
      name: 'upload with overwrite=true',
      request: multipartRequest([...fields(name), { name: 'overwrite', value: 'true' }, audio(toneWav(2))]),
      expect: { ok: 201, check: voiceJson(name) },
    },
    uploadRefused(
      'overwrite=yes',
      [...fields(name), { name: 'overwrite', value: 'yes' }, audio()],
      400,
      'INVALID_FIELD',
      'overwrite',
    ),
    { name: 'get the voice', request: get(`${VOICES_PATH}/${name}`), expect: { ok: 200, check: voiceJson(name) } },
    { name: 'list voices', request: get(VOICES_PATH), expect: { ok: 200 } },
    { name: 'delete the voice', request: get(`${VOICES_PATH}/${name}`, 'DELETE'), expect: { ok: 200 } },
    {
      name: 'delete it again',
      request: get(`${VOICES_PATH}/${name}`, 'DELETE'),
      expect: refused(404, 'VOICE_NOT_FOUND'),
    },
    { name: 'get the deleted voice', request: get(`${VOICES_PATH}/${name}`), expect: refused(404, 'VOICE_NOT_FOUND') },
  ];
}

function badFields(): HttpCase[] {
  return [
    uploadRefused('no name', [{ name: 'text', value: 'words' }, audio()], 400, 'MISSING_FIELD', 'name'),
    uploadRefused('no text', [{ name: 'name', value: 'fuzz-no-text' }, audio()], 400, 'MISSING_FIELD', 'text'),
    uploadRefused('no audio', fields('fuzz-bad-1'), 400, 'MISSING_FIELD', 'audio'),
    uploadRefused('a name that climbs out', [...fields('../escape'), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('a hidden name', [...fields('.tmp-fuzz'), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('a name with a slash', [...fields('a/b'), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('a name of 65 characters', [...fields('n'.repeat(65)), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('a name with accents', [...fields('café'), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('an empty name', [...fields(''), audio()], 400, 'VOICE_NAME_INVALID', 'name'),
    uploadRefused('a blank transcript', [...fields('fuzz-bad-2', '   '), audio()], 400, 'VOICE_TEXT_EMPTY', 'text'),
    uploadRefused(
      'a transcript over 4096 bytes',
      [...fields('fuzz-bad-3', 'é'.repeat(2049)), audio()],
      400,
      'VOICE_TEXT_TOO_LONG',
      'text',
    ),
    uploadRefused(
      'a structural token in the transcript',
      [...fields('fuzz-bad-4', 'hi <|im_start|> there'), audio()],
      400,
      'TEXT_STRUCTURAL_TOKEN',
      'text',
    ),
    uploadRefused(
      'an unknown field',
      [...fields('fuzz-bad-5'), { name: 'speaker', value: '1' }, audio()],
      400,
      'UNKNOWN_FIELD',
      'speaker',
    ),
    uploadRefused(
      'a file under another name',
      [...fields('fuzz-bad-6'), { name: 'sample', value: toneWav(1), filename: 'a.wav' }],
      400,
      'UNKNOWN_FIELD',
      'sample',
    ),
    uploadRefused(
      'two audio files',
      [...fields('fuzz-bad-7'), audio(), audio()],
      400,
      'VOICE_UPLOAD_TOO_MANY_PARTS',
      'body',
    ),
    uploadRefused(
      'too many fields',
      [...fields('fuzz-bad-8'), ...fields('fuzz-b'), audio()],
      400,
      'VOICE_UPLOAD_TOO_MANY_PARTS',
      'body',
    ),
  ];
}

function badAudio(): HttpCase[] {
  const wav = toneWav(1);
  const truncated = Buffer.from(wav.subarray(0, 100));
  return [
    uploadRefused(
      'an empty file',
      [...fields('fuzz-bad-9'), audio(new Uint8Array(0))],
      400,
      'VOICE_AUDIO_EMPTY',
      'audio',
    ),
    uploadRefused(
      'a file that is not audio',
      [...fields('fuzz-bad-10'), audio(Buffer.from('hello, not audio'))],
      400,
      'AUDIO_UNKNOWN_FORMAT',
      'audio',
    ),
    uploadRefused(
      'a WAV header alone',
      [...fields('fuzz-bad-11'), audio(Buffer.from(wav.subarray(0, 44)))],
      400,
      'AUDIO_TRUNCATED',
      'audio',
    ),
    uploadRefused(
      'audio shorter than a frame',
      [...fields('fuzz-bad-12'), audio(toneWav(0.02))],
      400,
      'VOICE_AUDIO_TOO_SHORT',
      'audio',
    ),
    uploadRefused(
      'a WAV cut short in its data',
      [...fields('fuzz-bad-13'), audio(truncated)],
      400,
      'AUDIO_TRUNCATED',
      'audio',
    ),
    uploadRefused(
      'a file over 10 MB',
      [...fields('fuzz-bad-14'), audio(new Uint8Array(10 * 1024 * 1024 + 1))],
      413,
      'VOICE_AUDIO_TOO_LARGE',
      'audio',
    ),
  ];
}

function badMultipart(): HttpCase[] {
  const whole = multipartBody([...fields('fuzz-bad-15'), audio()]);
  const withType = (name: string, contentType: string, body: Buffer, code: string) => ({
    name: `upload: ${name}`,
    request: { method: 'POST', path: VOICES_PATH, headers: { 'content-type': contentType }, body },
    expect: refused(400, code, 'body'),
  });
  return [
    withType('a JSON body', 'application/json', Buffer.from('{"name":"x"}'), 'VOICE_UPLOAD_NOT_MULTIPART'),
    withType('no boundary', 'multipart/form-data', whole, 'VOICE_UPLOAD_MALFORMED'),
    withType(
      'another boundary than the body',
      'multipart/form-data; boundary=elsewhere',
      whole,
      'VOICE_UPLOAD_MALFORMED',
    ),
    uploadRefused('a body cut short', whole.subarray(0, whole.length - 300), 400, 'VOICE_UPLOAD_MALFORMED', 'body'),
    uploadRefused(
      'a part without headers (skipped, so no name)',
      Buffer.from(`--${BOUNDARY}\r\ngarbage\r\n\r\n--${BOUNDARY}--\r\n`),
      400,
      'MISSING_FIELD',
      'name',
    ),
    uploadRefused('only the closing boundary', Buffer.from(`--${BOUNDARY}--\r\n`), 400, 'MISSING_FIELD', 'name'),
  ];
}

function paths(): HttpCase[] {
  return [
    {
      name: 'get with a dot-dot id',
      request: get(`${VOICES_PATH}/%2e%2e`),
      expect: refused(400, 'VOICE_NAME_INVALID', 'id'),
    },
    {
      name: 'delete through an encoded slash',
      request: get(`${VOICES_PATH}/..%2f..%2fetc`, 'DELETE'),
      expect: refused(400, 'VOICE_NAME_INVALID', 'id'),
    },
    {
      name: 'delete a temporary folder name',
      request: get(`${VOICES_PATH}/.tmp-x`, 'DELETE'),
      expect: refused(400, 'VOICE_NAME_INVALID', 'id'),
    },
    {
      name: 'get an id with a NUL',
      request: get(`${VOICES_PATH}/a%00b`),
      expect: refused(400, 'VOICE_NAME_INVALID', 'id'),
    },
    {
      name: 'get an id with bad encoding',
      request: get(`${VOICES_PATH}/%zz`),
      expect: refused(400, 'INVALID_URL_ENCODING'),
    },
    {
      name: 'get an id of 300 characters',
      request: get(`${VOICES_PATH}/${'a'.repeat(300)}`),
      expect: refused(414, 'PATH_PARAMETER_TOO_LONG'),
    },
    { name: 'get an unknown voice', request: get(`${VOICES_PATH}/nobody`), expect: refused(404, 'VOICE_NOT_FOUND') },
  ];
}

export const VOICE_CASES: readonly HttpCase[] = [
  ...lifecycle(),
  ...badFields(),
  ...badAudio(),
  ...badMultipart(),
  ...paths(),
];
