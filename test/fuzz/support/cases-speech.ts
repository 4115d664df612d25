// Table cases for POST /v1/audio/speech: every format in every reply mode, the extensions at their limits, and
// wrong types, out-of-range values, unknown fields, structural tokens and broken references, each refused by name.
import { toneWav } from '../../voices/wav-fixture.ts';
import { type HttpCase, rawBody, refused, SPEECH, speaks, speechRefused } from './case.ts';
import { FUZZ_BODY_LIMIT, STORED_VOICE } from './fuzz-server.ts';
import { SPEECH_PATH } from './requests.ts';

const FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
const MODES: readonly { stream_format?: string }[] = [{}, { stream_format: 'audio' }, { stream_format: 'sse' }];

const wavBase64 = Buffer.from(toneWav(0.5, 22050)).toString('base64');
const reference = { audio: wavBase64, text: 'a short tone' };
const STRUCTURAL = ['<|im_start|>', '<|im_end|>', '<|voice|>', '<|text|>', '<|interleave|>', '<|semantic:17|>'];

function formatsAndModes(): HttpCase[] {
  return FORMATS.flatMap((format) =>
    MODES.map((mode) =>
      speaks(`${format} ${mode.stream_format ?? 'whole'}`, { ...SPEECH, response_format: format, ...mode }),
    ),
  );
}

function accepted(): HttpCase[] {
  return [
    speaks('mp3 by default', { input: 'no format given', max_frames: 2 }),
    speaks('stream: true', { ...SPEECH, stream: true }),
    speaks('an OpenAI voice name', { ...SPEECH, voice: 'alloy' }),
    speaks('the default voice', { ...SPEECH, voice: 'default' }),
    speaks('a stored voice by name', { ...SPEECH, voice: STORED_VOICE }),
    speaks('a stored voice as an object', { ...SPEECH, voice: { id: STORED_VOICE } }),
    speaks('instructions', { ...SPEECH, instructions: 'calmly, like a narrator' }),
    speaks('any model name', { ...SPEECH, model: 'tts-1-hd' }),
    speaks('speed 0.25 (wav)', { ...SPEECH, response_format: 'wav', speed: 0.25 }),
    speaks('speed 4 (pcm)', { ...SPEECH, speed: 4 }),
    speaks('speed exactly 1', { ...SPEECH, speed: 1 }),
    speaks('sample_rate 8000', { ...SPEECH, sample_rate: 8000 }),
    speaks('sample_rate 48000 wav', { ...SPEECH, response_format: 'wav', sample_rate: 48000 }),
    speaks('opus at 24000 as a stream', {
      ...SPEECH,
      response_format: 'opus',
      sample_rate: 24000,
      stream_format: 'audio',
    }),
    speaks('seed 0', { ...SPEECH, seed: 0 }),
    speaks('seed 2^32 - 1', { ...SPEECH, seed: 4294967295 }),
    speaks('no seed', { input: 'random seed', response_format: 'pcm', max_frames: 2 }),
    speaks('temperature 2, top_p 1, top_k 1', { ...SPEECH, temperature: 2, top_p: 1, top_k: 1 }),
    speaks('top_k 4097', { ...SPEECH, top_k: 4097 }),
    speaks('max_frames 1', { ...SPEECH, max_frames: 1 }),
    speaks('no max_frames', { input: 'short', response_format: 'pcm' }),
    speaks('emoji and right-to-left text', { ...SPEECH, input: 'héllo 👋🏽 שלום مرحبا' }),
    speaks('combining marks and zero-width joiners', { ...SPEECH, input: 'e\u0301\u0302 👩\u200d👩\u200d👧' }),
    speaks('a NUL and control characters', { ...SPEECH, input: 'a\u0000b\u0007c\u001b[0m' }),
    speaks('a lone surrogate', { ...SPEECH, input: 'half \ud800 a pair' }),
    speaks('exactly 4096 code points', { ...SPEECH, input: 'a'.repeat(4096), max_frames: 1 }),
    speaks('4096 astral code points (8192 UTF-16 units)', { ...SPEECH, input: '😀'.repeat(4096), max_frames: 1 }),
    speaks('an almost-token that is not one', { ...SPEECH, input: '<|im_star|> <| voice |> |> <|' }),
    speaks('a one-off reference (base64 WAV)', { ...SPEECH, references: [reference] }),
    speaks('a one-off reference as a data URL', {
      ...SPEECH,
      references: [{ audio: `data:audio/wav;base64,${wavBase64}`, text: 'a short tone' }],
    }),
    speaks('four references, the limit', { ...SPEECH, references: Array(4).fill(reference) }),
    speaks('base64 with line breaks', {
      ...SPEECH,
      references: [{ ...reference, audio: wavBase64.replace(/(.{76})/g, '$1\n') }],
    }),
  ];
}

function refusedFields(): HttpCase[] {
  return [
    speechRefused('missing input', { response_format: 'pcm' }, 400, 'MISSING_FIELD', 'input'),
    speechRefused('input null', { ...SPEECH, input: null }, 400, 'INVALID_FIELD', 'input'),
    speechRefused('input a number', { ...SPEECH, input: 42 }, 400, 'INVALID_FIELD', 'input'),
    speechRefused('input an array', { ...SPEECH, input: ['a', 'b'] }, 400, 'INVALID_FIELD', 'input'),
    speechRefused('input an object', { ...SPEECH, input: { text: 'a' } }, 400, 'INVALID_FIELD', 'input'),
    speechRefused('input empty', { ...SPEECH, input: '' }, 400, 'INVALID_FIELD', 'input'),
    speechRefused('4097 code points', { ...SPEECH, input: 'a'.repeat(4097) }, 400, 'INPUT_TOO_LONG', 'input'),
    speechRefused('4097 astral code points', { ...SPEECH, input: '😀'.repeat(4097) }, 400, 'INPUT_TOO_LONG', 'input'),
    speechRefused('an unknown field', { ...SPEECH, speaker: 'bob' }, 400, 'UNKNOWN_FIELD', 'speaker'),
    speechRefused('a misspelled field', { ...SPEECH, responseFormat: 'wav' }, 400, 'UNKNOWN_FIELD', 'responseFormat'),
    speechRefused('voice empty', { ...SPEECH, voice: '' }, 400, 'INVALID_FIELD', 'voice'),
    speechRefused('voice a number', { ...SPEECH, voice: 7 }, 400, 'INVALID_FIELD', 'voice'),
    speechRefused('voice object without id', { ...SPEECH, voice: {} }, 400, 'MISSING_FIELD', 'voice.id'),
    speechRefused(
      'voice object with extra',
      { ...SPEECH, voice: { id: 'alloy', x: 1 } },
      400,
      'UNKNOWN_FIELD',
      'voice.x',
    ),
    speechRefused('unknown voice', { ...SPEECH, voice: 'nobody-here' }, 404, 'VOICE_NOT_FOUND', 'voice'),
    speechRefused('a path as a voice', { ...SPEECH, voice: '../../etc/passwd' }, 404, 'VOICE_NOT_FOUND', 'voice'),
    speechRefused(
      'response_format in capitals',
      { ...SPEECH, response_format: 'MP3' },
      400,
      'INVALID_FIELD',
      'response_format',
    ),
    speechRefused(
      'response_format ogg',
      { ...SPEECH, response_format: 'ogg' },
      400,
      'INVALID_FIELD',
      'response_format',
    ),
    speechRefused(
      'response_format null',
      { ...SPEECH, response_format: null },
      400,
      'INVALID_FIELD',
      'response_format',
    ),
    speechRefused('speed 0', { ...SPEECH, speed: 0 }, 400, 'INVALID_FIELD', 'speed'),
    speechRefused('speed 4.01', { ...SPEECH, speed: 4.01 }, 400, 'INVALID_FIELD', 'speed'),
    speechRefused('speed 1e308', { ...SPEECH, speed: 1e308 }, 400, 'INVALID_FIELD', 'speed'),
    speechRefused('speed as text', { ...SPEECH, speed: '1' }, 400, 'INVALID_FIELD', 'speed'),
    speechRefused('sample_rate 7999', { ...SPEECH, sample_rate: 7999 }, 400, 'INVALID_FIELD', 'sample_rate'),
    speechRefused('sample_rate 48001', { ...SPEECH, sample_rate: 48001 }, 400, 'INVALID_FIELD', 'sample_rate'),
    speechRefused('sample_rate fractional', { ...SPEECH, sample_rate: 22050.5 }, 400, 'INVALID_FIELD', 'sample_rate'),
    speechRefused('seed 2^32', { ...SPEECH, seed: 4294967296 }, 400, 'INVALID_FIELD', 'seed'),
    speechRefused('seed fractional', { ...SPEECH, seed: 1.5 }, 400, 'INVALID_FIELD', 'seed'),
    speechRefused('seed as text', { ...SPEECH, seed: '7' }, 400, 'INVALID_FIELD', 'seed'),
    speechRefused('temperature 0', { ...SPEECH, temperature: 0 }, 400, 'INVALID_FIELD', 'temperature'),
    speechRefused('temperature 2.01', { ...SPEECH, temperature: 2.01 }, 400, 'INVALID_FIELD', 'temperature'),
    speechRefused('top_p 0', { ...SPEECH, top_p: 0 }, 400, 'INVALID_FIELD', 'top_p'),
    speechRefused('top_k 0', { ...SPEECH, top_k: 0 }, 400, 'INVALID_FIELD', 'top_k'),
    speechRefused('top_k 4098', { ...SPEECH, top_k: 4098 }, 400, 'INVALID_FIELD', 'top_k'),
    speechRefused('max_frames 0', { ...SPEECH, max_frames: 0 }, 400, 'INVALID_FIELD', 'max_frames'),
    speechRefused('max_frames negative', { ...SPEECH, max_frames: -5 }, 400, 'INVALID_FIELD', 'max_frames'),
    speechRefused('max_frames as text', { ...SPEECH, max_frames: '3' }, 400, 'INVALID_FIELD', 'max_frames'),
    speechRefused(
      'max_frames over the limit',
      { ...SPEECH, max_frames: 5000 },
      400,
      'FRAME_LIMIT_EXCEEDED',
      'max_frames',
    ),
    speechRefused('max_frames 1e20', { ...SPEECH, max_frames: 1e20 }, 400, 'FRAME_LIMIT_EXCEEDED', 'max_frames'),
    speechRefused(
      'max_frames past the context',
      { ...SPEECH, max_frames: 4090 },
      400,
      'CONTEXT_OVERFLOW',
      'max_frames',
    ),
    speechRefused(
      'stream_format with a space',
      { ...SPEECH, stream_format: 'sse ' },
      400,
      'INVALID_FIELD',
      'stream_format',
    ),
    speechRefused('stream as a number', { ...SPEECH, stream: 1 }, 400, 'INVALID_FIELD', 'stream'),
    speechRefused('instructions a number', { ...SPEECH, instructions: 3 }, 400, 'INVALID_FIELD', 'instructions'),
    speechRefused('model a number', { ...SPEECH, model: 1 }, 400, 'INVALID_FIELD', 'model'),
    ...STRUCTURAL.map((token) =>
      speechRefused(
        `${token} in input`,
        { ...SPEECH, input: `say ${token} now` },
        400,
        'TEXT_STRUCTURAL_TOKEN',
        'input',
      ),
    ),
    speechRefused(
      'a structural token in instructions',
      { ...SPEECH, instructions: 'be <|voice|>' },
      400,
      'TEXT_STRUCTURAL_TOKEN',
      'instructions',
    ),
  ];
}

function refusedReferences(): HttpCase[] {
  const withReference = (value: object) => ({ ...SPEECH, references: [{ ...reference, ...value }] });
  return [
    speechRefused(
      'reference audio not base64',
      withReference({ audio: 'not base64!' }),
      400,
      'REFERENCE_AUDIO_INVALID',
      'references[0].audio',
    ),
    speechRefused(
      'reference base64 of impossible length',
      withReference({ audio: 'AAAAA' }),
      400,
      'REFERENCE_AUDIO_INVALID',
      'references[0].audio',
    ),
    speechRefused(
      'reference data URL without base64',
      withReference({ audio: 'data:audio/wav,RIFF' }),
      400,
      'REFERENCE_AUDIO_INVALID',
      'references[0].audio',
    ),
    speechRefused(
      'reference data URL without a comma',
      withReference({ audio: 'data:audio/wav;base64' }),
      400,
      'REFERENCE_AUDIO_INVALID',
      'references[0].audio',
    ),
    speechRefused('reference audio empty', withReference({ audio: '' }), 400, 'INVALID_FIELD', 'references[0].audio'),
    speechRefused('reference audio a number', withReference({ audio: 5 }), 400, 'INVALID_FIELD', 'references[0].audio'),
    speechRefused(
      'reference without text',
      { ...SPEECH, references: [{ audio: wavBase64 }] },
      400,
      'MISSING_FIELD',
      'references[0].text',
    ),
    speechRefused(
      'reference with an unknown field',
      withReference({ speaker: 1 }),
      400,
      'UNKNOWN_FIELD',
      'references[0].speaker',
    ),
    speechRefused('references not an array', { ...SPEECH, references: reference }, 400, 'INVALID_FIELD', 'references'),
    speechRefused(
      'a reference that is not audio',
      withReference({ audio: Buffer.from('just some text, not audio').toString('base64') }),
      400,
      'AUDIO_UNKNOWN_FORMAT',
      'references[0].audio',
    ),
    speechRefused(
      'a reference shorter than a frame',
      withReference({ audio: Buffer.from(toneWav(0.01, 22050)).toString('base64') }),
      400,
      'VOICE_AUDIO_TOO_SHORT',
      'references[0].audio',
    ),
    speechRefused(
      'a structural token in a reference transcript',
      withReference({ text: 'hi <|im_end|>' }),
      400,
      'TEXT_STRUCTURAL_TOKEN',
      'references[0].text',
    ),
    speechRefused(
      'five references, one over the limit',
      { ...SPEECH, references: Array(5).fill(reference) },
      400,
      'INVALID_FIELD',
      'references',
    ),
    speechRefused(
      'nine references',
      { ...SPEECH, references: Array(9).fill(reference) },
      400,
      'INVALID_FIELD',
      'references',
    ),
    speechRefused(
      'a stored voice and four references',
      { ...SPEECH, voice: STORED_VOICE, references: Array(4).fill(reference) },
      400,
      'TOO_MANY_REFERENCES',
      'references',
    ),
    speechRefused(
      'a body over the limit',
      { ...SPEECH, references: [{ ...reference, audio: 'A'.repeat(FUZZ_BODY_LIMIT) }] },
      413,
      'BODY_TOO_LARGE',
    ),
  ];
}

function refusedBodies(): HttpCase[] {
  const raw = (
    name: string,
    body: string | Buffer,
    status: number,
    code: string,
    contentType = 'application/json',
  ) => ({
    name,
    request: rawBody(SPEECH_PATH, body, contentType),
    expect: refused(status, code),
  });
  return [
    raw('malformed JSON', '{"input": "hi",', 400, 'MALFORMED_JSON'),
    raw('an empty JSON body', '', 400, 'MALFORMED_JSON'),
    raw('JSON null', 'null', 400, 'INVALID_FIELD'),
    raw('a JSON string', '"hello"', 400, 'INVALID_FIELD'),
    raw('a JSON array', '[1, 2]', 400, 'INVALID_FIELD'),
    raw('a deeply nested array', `${'['.repeat(100000)}${']'.repeat(100000)}`, 400, 'INVALID_FIELD'),
    raw('__proto__ in the body', '{"input": "hi", "__proto__": {"admin": true}}', 400, 'MALFORMED_JSON'),
    raw(
      'constructor.prototype in the body',
      '{"input": "hi", "constructor": {"prototype": {"x": 1}}}',
      400,
      'MALFORMED_JSON',
    ),
    raw('plain text', 'hello', 415, 'UNSUPPORTED_CONTENT_TYPE', 'text/plain'),
    raw('XML', '<speech/>', 415, 'UNSUPPORTED_CONTENT_TYPE', 'application/xml'),
    raw('a form body', 'input=hello', 415, 'UNSUPPORTED_CONTENT_TYPE', 'application/x-www-form-urlencoded'),
    raw(
      'msgpack to the OpenAI route',
      Buffer.from([0x81, 0xa1, 0x61, 0x01]),
      415,
      'UNSUPPORTED_CONTENT_TYPE',
      'application/msgpack',
    ),
    {
      name: 'invalid UTF-8 in a JSON string is replaced, not a crash',
      request: rawBody(
        SPEECH_PATH,
        Buffer.concat([
          Buffer.from('{"input":"a'),
          Buffer.from([0xff, 0xfe]),
          Buffer.from('b","response_format":"pcm","max_frames":2}'),
        ]),
        'application/json',
      ),
      expect: { audio: { format: 'pcm', mode: 'whole', sampleRate: 24000, exactLength: true } },
    },
    {
      name: 'a duplicate key (the last wins)',
      request: rawBody(
        SPEECH_PATH,
        '{"input":"a","input":"b","response_format":"pcm","max_frames":2}',
        'application/json',
      ),
      expect: { audio: { format: 'pcm', mode: 'whole', sampleRate: 24000, exactLength: true } },
    },
  ];
}

export const SPEECH_CASES: readonly HttpCase[] = [
  ...formatsAndModes(),
  ...accepted(),
  ...refusedFields(),
  ...refusedReferences(),
  ...refusedBodies(),
];
