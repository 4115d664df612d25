// `drama3 encode --audio ref.wav --out codes.npy`: a reference recording → the codec's frames, written as a NumPy
// array int32 [10, F] (codebook-major, the layout Fish tools use for prompt tokens). Reads what uploads accept (wav,
// mp3, flac, ogg, aac, m4a) at any rate and channel count, within the upload limits.
import { readFile, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { decodeUpload } from '../audio/decode.ts';
import { checkCheckpointFolder } from '../checkpoint/regular-file.ts';
import { encodeReferenceAudio, loadCheckpointCodec } from '../codec/reference.ts';
import type { Frame } from '../model/types.ts';
import { DEFAULT_CACHE_DIR, ensureTinyCheckpoint } from './default-model.ts';

interface EncodeFlags {
  readonly audio: string;
  readonly out: string;
  readonly model?: string;
  readonly cacheDir: string;
}

/** NumPy .npy v1.0 of little-endian int32 codes shaped [K, F]. */
export function framesToNpy(frames: readonly Frame[], codebooks: number): Uint8Array {
  const header = `{'descr': '<i4', 'fortran_order': False, 'shape': (${codebooks}, ${frames.length}), }`;
  const unpadded = 10 + header.length + 1;
  const padded = `${header}${' '.repeat((64 - (unpadded % 64)) % 64)}\n`;
  const out = new Uint8Array(10 + padded.length + 4 * codebooks * frames.length);
  out.set([0x93, ...Buffer.from('NUMPY'), 1, 0], 0);
  new DataView(out.buffer).setUint16(8, padded.length, true);
  out.set(Buffer.from(padded, 'latin1'), 10);
  const codes = new DataView(out.buffer, 10 + padded.length);
  frames.forEach((frame, index) => {
    for (let codebook = 0; codebook < codebooks; codebook++) {
      codes.setInt32(4 * (codebook * frames.length + index), frame[codebook]!, true);
    }
  });
  return out;
}

async function encode(flags: EncodeFlags): Promise<void> {
  const dir = flags.model ?? (await ensureTinyCheckpoint(flags.cacheDir));
  await checkCheckpointFolder(dir);
  const codec = await loadCheckpointCodec(dir);
  const audio = await decodeUpload(new Uint8Array(await readFile(flags.audio)));
  const started = performance.now();
  const frames = encodeReferenceAudio(codec, [audio.samples], audio.sampleRate);
  const seconds = (performance.now() - started) / 1000;
  const codebooks = 1 + codec.config.residualCodebooks;
  await writeFile(flags.out, framesToNpy(frames, codebooks));
  console.error(`${flags.out}: ${frames.length} frames × ${codebooks} codes (encoded in ${seconds.toFixed(2)} s)`);
}

export function registerEncode(program: Command): void {
  program
    .command('encode')
    .description("Encode a reference recording into the codec's frames, written as a NumPy int32 [10, F] array")
    .requiredOption(
      '--audio <file>',
      'reference recording (wav, mp3, flac, ogg, aac or m4a; any rate and channel count)',
    )
    .requiredOption('--out <file>', 'where to write the codes (.npy)')
    .option('--model <dir>', 'checkpoint folder (config.json + codec.pth); default: the embedded tiny checkpoint')
    .option('--cache-dir <dir>', 'where the embedded tiny checkpoint lives', DEFAULT_CACHE_DIR)
    .action(async (flags: EncodeFlags) => {
      await encode(flags);
    });
}
