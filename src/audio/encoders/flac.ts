// `flac`: whole-file FLAC, mono 16-bit, fixed 4096-sample blocks (see flac-frame.ts for the frames).
// Written here because no maintained npm FLAC encoder runs on Node 20 without native builds.
// STREAMINFO carries the real sample count, frame size range and MD5 of the samples, so the file is
// seekable and verifiable; that needs the whole signal, hence `streamable: false`.
import { createHash } from 'node:crypto';
import { BitWriter } from '../bit-writer.ts';
import { writeFlacFrame } from '../flac-frame.ts';
import { concatSamples, floatToInt16, floatToPcm16 } from '../pcm.ts';
import { type AudioEncoder, type AudioEncoderOptions, checkEncoderRate, finishOnce } from './common.ts';

const BLOCK_SIZE = 4096;
/** STREAMINFO stores the rate in 20 bits. */
const MAX_FLAC_RATE = 655350;

/** FLAC bytes for mono float samples (quantised to 16 bits as `pcm` does). */
export function encodeFlac(samples: Float32Array, sampleRate: number): Uint8Array {
  const quantised = new Int32Array(samples.length);
  for (let index = 0; index < samples.length; index++) quantised[index] = floatToInt16(samples[index]!);
  const frames = new BitWriter();
  let minFrameBytes = Number.POSITIVE_INFINITY;
  let maxFrameBytes = 0;
  for (let start = 0, frame = 0; start < quantised.length; start += BLOCK_SIZE, frame++) {
    const before = frames.byteLength;
    writeFlacFrame(frames, quantised.subarray(start, start + BLOCK_SIZE), frame, BLOCK_SIZE, sampleRate);
    const size = frames.byteLength - before;
    minFrameBytes = Math.min(minFrameBytes, size);
    maxFrameBytes = Math.max(maxFrameBytes, size);
  }
  const header = new BitWriter();
  header.write(0x664c6143, 32); // "fLaC"
  header.write(1, 1); // last metadata block
  header.write(0, 7); // STREAMINFO
  header.write(34, 24);
  // A stream shorter than one block has a single, shorter block: the minimum may not exceed it.
  const blockSize = Math.min(BLOCK_SIZE, Math.max(quantised.length, 16));
  header.write(blockSize, 16);
  header.write(blockSize, 16);
  header.write(maxFrameBytes === 0 ? 0 : minFrameBytes, 24);
  header.write(maxFrameBytes, 24);
  header.write(sampleRate, 20);
  header.write(0, 3); // channels - 1
  header.write(15, 5); // bits per sample - 1
  header.write(quantised.length, 36);
  const md5 = createHash('md5').update(floatToPcm16(samples)).digest();
  for (const byte of md5) header.write(byte, 8);
  const headerBytes = header.view();
  const frameBytes = frames.view();
  const file = new Uint8Array(headerBytes.length + frameBytes.length);
  file.set(headerBytes, 0);
  file.set(frameBytes, headerBytes.length);
  return file;
}

export function createFlacEncoder(options: AudioEncoderOptions): AudioEncoder {
  checkEncoderRate('flac', options.sampleRate);
  if (options.sampleRate > MAX_FLAC_RATE) checkEncoderRate('flac', options.sampleRate, [MAX_FLAC_RATE]);
  const chunks: Float32Array[] = [];
  return finishOnce(
    { format: 'flac', sampleRate: options.sampleRate, streamable: false },
    {
      push(pcm) {
        chunks.push(pcm.slice());
        return new Uint8Array(0);
      },
      finish() {
        return encodeFlac(concatSamples(chunks), options.sampleRate);
      },
      abort() {
        // The whole signal is buffered here; let it go now rather than when the reply is collected.
        chunks.length = 0;
      },
    },
  );
}
