// File fuzz cases for a checkpoint's config.json (read by loadConfig) and for uploaded audio files (read from disk
// and decoded by decodeUpload, as `drama3 encode --audio FILE` and the voices routes do).
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeUpload } from '../../src/audio/decode.ts';
import { configToJson, loadConfig } from '../../src/model/config.ts';
import { NO_SPECIAL_TOKENS, tinyConfig } from '../model/tiny-config.ts';
import { type FileCase, type FileCaseGroup, fileOf, makeFifo } from './file-case.ts';

type Json = Record<string, unknown>;

/** The tiny config's JSON with the value at a dotted path replaced (undefined: removed). */
function tinyJsonWith(path: string, value: unknown): Json {
  const config = tinyConfig({ specialTokens: { ...NO_SPECIAL_TOKENS, imEnd: 151645, semanticBegin: 151688 } });
  const json = structuredClone(configToJson(config)) as Json;
  const keys = path.split('.');
  let node = json;
  for (const key of keys.slice(0, -1)) node = node[key] as Json;
  if (value === undefined) delete node[keys.at(-1)!];
  else node[keys.at(-1)!] = value;
  return json;
}

const config = (name: string, code: string, contents: string | Uint8Array): FileCase => ({
  name,
  code,
  build: async (dir) => {
    await fileOf(dir, 'config.json', contents);
    return dir;
  },
});
const field = (path: string, value: unknown, code: string) =>
  config(`config ${path} = ${JSON.stringify(value) ?? 'absent'}`, code, JSON.stringify(tinyJsonWith(path, value)));

const configCases: FileCase[] = [
  { name: 'no config.json', code: 'CONFIG_NOT_FOUND', build: async (dir) => dir },
  config('not JSON', 'CONFIG_NOT_JSON', '{"text_config": {'),
  config('not UTF-8', 'CONFIG_NOT_JSON', Uint8Array.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])),
  config('a JSON array', 'CONFIG_NOT_OBJECT', '[]'),
  config('empty', 'CONFIG_NOT_JSON', ''),
  field('text_config', undefined, 'CONFIG_MISSING_FIELD'),
  field('text_config.hidden_size', '64', 'CONFIG_NOT_INTEGER'),
  field('text_config.num_experts', 0, 'CONFIG_OUT_OF_RANGE'),
  field('text_config.rms_norm_eps', -1, 'CONFIG_OUT_OF_RANGE'),
  field('text_config.layer_types', ['linear_attention'], 'CONFIG_BAD_LAYER_TYPES'),
  field('model_type', 'llama', 'CONFIG_UNSUPPORTED'),
  field('synthetic', 'yes', 'CONFIG_NOT_BOOLEAN'),
  {
    name: 'config.json is a folder',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      await mkdir(join(dir, 'config.json'));
      return dir;
    },
  },
  {
    name: 'config.json is a FIFO',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      makeFifo(join(dir, 'config.json'));
      return dir;
    },
  },
];

/** A 16-bit mono WAV header + samples with fields overridden: [byte offset, little-endian value, byte width]. */
function wav(samples: number, edits: [number, number, 2 | 4][] = []): Uint8Array {
  const out = Buffer.alloc(44 + 2 * samples);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + 2 * samples, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(24000, 24);
  out.writeUInt32LE(48000, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(2 * samples, 40);
  for (const [offset, value, width] of edits) {
    if (width === 2) out.writeUInt16LE(value, offset);
    else out.writeUInt32LE(value, offset);
  }
  return new Uint8Array(out);
}

const audio = (name: string, code: string, bytes: Uint8Array | string): FileCase => ({
  name: `audio: ${name}`,
  code,
  build: (dir) => fileOf(dir, 'upload.bin', bytes),
});

/** A FLAC stream header whose STREAMINFO is valid, followed by bytes that are no frame. */
function brokenFlac(): Uint8Array {
  const info = Buffer.alloc(34);
  info.writeUInt16BE(4096, 0);
  info.writeUInt16BE(4096, 2);
  // 24000 Hz, 1 channel, 16 bits, 24000 samples: rate(20) channels-1(3) bits-1(5) samples(36).
  const packed = (24000n << 44n) | (0n << 41n) | (15n << 36n) | 24000n;
  info.writeBigUInt64BE(packed, 10);
  const header = Buffer.concat([Buffer.from('fLaC'), Buffer.from([0x80, 0, 0, 34]), info]);
  return new Uint8Array(Buffer.concat([header, Buffer.alloc(200, 0x5a)]));
}

const audioCases: FileCase[] = [
  audio('empty', 'AUDIO_EMPTY', ''),
  audio('text', 'AUDIO_UNKNOWN_FORMAT', 'this is not audio at all, only words'),
  audio('RIFF without WAVE', 'AUDIO_UNKNOWN_FORMAT', 'RIFF\x10\x00\x00\x00AVI LIST'),
  audio('WAV cut inside its header', 'AUDIO_TRUNCATED', wav(100).subarray(0, 30)),
  audio('WAV of 64-bit integers', 'AUDIO_UNSUPPORTED_ENCODING', wav(100, [[34, 64, 2]])),
  audio('WAV of A-law', 'AUDIO_UNSUPPORTED_ENCODING', wav(100, [[20, 6, 2]])),
  audio('WAV at 0 Hz', 'AUDIO_BAD_SAMPLE_RATE', wav(100, [[24, 0, 4]])),
  audio('WAV with 0 channels', 'AUDIO_EMPTY', wav(100, [[22, 0, 2]])),
  audio('WAV with 300 channels', 'AUDIO_TOO_MANY_CHANNELS', wav(300, [[22, 300, 2]])),
  audio('WAV with 0 samples', 'AUDIO_EMPTY', wav(0)),
  audio('FLAC with no decodable frame', 'AUDIO_EMPTY', brokenFlac()),
];

export const configGroup: FileCaseGroup = { kind: 'config.json', load: loadConfig, cases: configCases };
export const audioGroup: FileCaseGroup = {
  kind: 'audio upload',
  load: async (path) => decodeUpload(new Uint8Array(await readFile(path))),
  cases: audioCases,
};
