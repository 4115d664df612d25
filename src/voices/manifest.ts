// One voice folder's layout and its manifest. A folder holds:
//   voice.json      the manifest below
//   audio.<ext>     the uploaded file, byte for byte (ext from its sniffed format)
//   transcript.txt  what the audio says (UTF-8, the manifest's ref_text)
//   codes.bin       the encoded frames: int32 little-endian [F, K] row-major, K = 10 codes per frame
// The manifest carries sizes and SHA-256 digests so that a truncated or edited file is found at load.
import { createHash } from 'node:crypto';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { CODES_PER_FRAME } from '../shared/frame.ts';

export const MANIFEST_FILE = 'voice.json';
export const TRANSCRIPT_FILE = 'transcript.txt';
export const CODES_FILE = 'codes.bin';
export const MANIFEST_FORMAT = 'drama3-voice-1';

export interface VoiceManifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly name: string;
  /** ISO 8601 time of the upload. */
  readonly created_at: string;
  readonly ref_text: string;
  readonly frames: number;
  readonly codebooks: number;
  readonly audio: { readonly file: string; readonly bytes: number; readonly sha256: string };
  readonly codes: { readonly file: string; readonly bytes: number; readonly sha256: string };
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** [F] frames of [K] codes → int32 little-endian bytes [F, K]. */
export function framesToBytes(frames: readonly Frame[]): Uint8Array {
  const out = new Uint8Array(frames.length * CODES_PER_FRAME * 4);
  const view = new DataView(out.buffer);
  frames.forEach((frame, row) => {
    if (frame.length !== CODES_PER_FRAME) {
      throw new DramaError('VOICE_FRAME_MALFORMED', `frame ${row} has ${frame.length} codes, not ${CODES_PER_FRAME}`, {
        kind: 'internal',
      });
    }
    for (let k = 0; k < CODES_PER_FRAME; k++) view.setInt32(4 * (row * CODES_PER_FRAME + k), frame[k]!, true);
  });
  return out;
}

export function bytesToFrames(bytes: Uint8Array): Frame[] {
  const width = CODES_PER_FRAME * 4;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: Frame[] = [];
  for (let row = 0; row < bytes.length / width; row++) {
    const frame = new Int32Array(CODES_PER_FRAME);
    for (let k = 0; k < CODES_PER_FRAME; k++) frame[k] = view.getInt32(row * width + 4 * k, true);
    frames.push(frame);
  }
  return frames;
}

function fail(reason: string): never {
  throw new DramaError('VOICE_CORRUPT', reason, { kind: 'internal' });
}

function fileEntry(value: unknown, field: string): VoiceManifest['audio'] {
  const entry = value as Record<string, unknown> | null;
  if (typeof entry !== 'object' || entry === null) fail(`${field} is missing`);
  const { file, bytes, sha256: digest } = entry;
  if (typeof file !== 'string' || !/^[a-z0-9.]+$/.test(file) || file.startsWith('.')) fail(`${field}.file is invalid`);
  if (!Number.isInteger(bytes) || (bytes as number) < 0) fail(`${field}.bytes is not a byte count`);
  if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) fail(`${field}.sha256 is not a SHA-256 digest`);
  return { file, bytes: bytes as number, sha256: digest };
}

/** Checks the JSON of voice.json field by field; throws VOICE_CORRUPT naming the first bad field. */
export function parseManifest(text: string): VoiceManifest {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    fail(`${MANIFEST_FILE} is not JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null) fail(`${MANIFEST_FILE} is not an object`);
  if (json.format !== MANIFEST_FORMAT) fail(`format is ${JSON.stringify(json.format)}, not ${MANIFEST_FORMAT}`);
  const { name, created_at, ref_text, frames, codebooks } = json;
  if (typeof name !== 'string') fail('name is not a string');
  if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at))) fail('created_at is not a time');
  if (typeof ref_text !== 'string') fail('ref_text is not a string');
  if (!Number.isInteger(frames) || (frames as number) < 1) fail('frames is not a positive integer');
  if (codebooks !== CODES_PER_FRAME) fail(`codebooks is ${JSON.stringify(codebooks)}, not ${CODES_PER_FRAME}`);
  const codes = fileEntry(json.codes, 'codes');
  if (codes.bytes !== (frames as number) * CODES_PER_FRAME * 4) {
    fail(`codes.bytes is ${codes.bytes}, not ${frames} frames × ${CODES_PER_FRAME} codes × 4 bytes`);
  }
  return {
    format: MANIFEST_FORMAT,
    name,
    created_at,
    ref_text,
    frames: frames as number,
    codebooks,
    audio: fileEntry(json.audio, 'audio'),
    codes,
  };
}
