// `opus`: libopus (@evan/opus) in Ogg (RFC 7845), mono, 20 ms frames; every push returns whole pages.
// libopus takes 8/12/16/24/48 kHz; other rates are resampled to 48 kHz here first. Granule positions count
// 48 kHz samples including the pre-skip (the encoder's look-ahead); the last page's granule trims the zero
// padding of the final frame, so the decoded length equals the input length.
import { Encoder } from '@evan/opus';
import { type OggPacket, OggStreamWriter } from '../ogg.ts';
import { concatBytes, concatSamples, floatToPcm16 } from '../pcm.ts';
import { createResampler, type Resampler } from '../resample.ts';
import {
  type AudioEncoder,
  type AudioEncoderOptions,
  checkEncoderBitrate,
  checkEncoderRate,
  finishOnce,
} from './common.ts';

const OPUS_RATES = [8000, 12000, 16000, 24000, 48000];
const DEFAULT_BITRATE = 64_000;
const GRANULE_RATE = 48000;
/** Stream serial number; fixed so that the same audio always gives the same bytes. */
const SERIAL = 0x64726133;
const VENDOR = 'drama3';

function opusHead(preSkip: number, inputSampleRate: number): Uint8Array {
  const head = new Uint8Array(19);
  const view = new DataView(head.buffer);
  head.set(new TextEncoder().encode('OpusHead'), 0);
  head[8] = 1; // version
  head[9] = 1; // channels
  view.setUint16(10, preSkip, true);
  view.setUint32(12, inputSampleRate, true);
  view.setInt16(16, 0, true); // output gain
  head[18] = 0; // channel mapping family 0: mono/stereo
  return head;
}

function opusTags(): Uint8Array {
  const vendor = new TextEncoder().encode(VENDOR);
  const tags = new Uint8Array(8 + 4 + vendor.length + 4);
  const view = new DataView(tags.buffer);
  tags.set(new TextEncoder().encode('OpusTags'), 0);
  view.setUint32(8, vendor.length, true);
  tags.set(vendor, 12);
  view.setUint32(12 + vendor.length, 0, true); // no user comments
  return tags;
}

export function createOpusEncoder(options: AudioEncoderOptions): AudioEncoder {
  checkEncoderRate('opus', options.sampleRate);
  const bitrate = options.bitrate ?? DEFAULT_BITRATE;
  checkEncoderBitrate('opus', bitrate, 6000, 510000);
  const encoderRate = OPUS_RATES.includes(options.sampleRate) ? options.sampleRate : GRANULE_RATE;
  const resampler: Resampler | undefined =
    encoderRate === options.sampleRate ? undefined : createResampler(options.sampleRate, encoderRate);
  const opus = new Encoder({ channels: 1, sample_rate: encoderRate as 48000, application: 'audio' });
  opus.bitrate = bitrate;
  const granuleScale = GRANULE_RATE / encoderRate;
  const frameSize = encoderRate / 50;
  // The package's type declarations misspell this getter; the runtime name is `lookahead`.
  const lookahead = (opus as unknown as { readonly lookahead: number }).lookahead;
  const preSkip = lookahead * granuleScale;
  const writer = new OggStreamWriter(SERIAL);
  let pending: Float32Array = new Float32Array(0);
  let samplesIn = 0;
  let packetsOut = 0;
  let headersSent = false;

  const headers = (): Uint8Array[] => {
    if (headersSent) return [];
    headersSent = true;
    // The identification and comment headers each sit alone on their page (RFC 7845 §3).
    return [
      ...writer.pages([{ data: opusHead(preSkip, options.sampleRate), granule: 0 }]),
      ...writer.pages([{ data: opusTags(), granule: 0 }]),
    ];
  };

  const encodeFrames = (samples: Float32Array): OggPacket[] => {
    pending = concatSamples([pending, samples]);
    samplesIn += samples.length;
    const packets: OggPacket[] = [];
    let offset = 0;
    for (; offset + frameSize <= pending.length; offset += frameSize) {
      const data = opus.encode(floatToPcm16(pending.subarray(offset, offset + frameSize)));
      packetsOut++;
      packets.push({ data: data.slice(), granule: packetsOut * frameSize * granuleScale });
    }
    pending = pending.slice(offset);
    return packets;
  };

  return finishOnce(
    { format: 'opus', sampleRate: options.sampleRate, streamable: true },
    {
      push(pcm) {
        const samples = resampler === undefined ? pcm : resampler.push(pcm);
        const header = headers();
        return concatBytes([...header, ...writer.pages(encodeFrames(samples))]);
      },
      finish() {
        const header = headers();
        const packets = encodeFrames(resampler === undefined ? new Float32Array(0) : resampler.flush());
        // Zero frames until the decoder has seen pre-skip + every input sample.
        const packetsNeeded = Math.ceil((samplesIn + lookahead) / frameSize);
        const padding = packetsNeeded * frameSize - samplesIn;
        const savedSamplesIn = samplesIn;
        packets.push(...encodeFrames(new Float32Array(padding)));
        const last = packets[packets.length - 1];
        if (last !== undefined) {
          packets[packets.length - 1] = { data: last.data, granule: preSkip + savedSamplesIn * granuleScale };
        }
        return concatBytes([...header, ...writer.pages(packets, true)]);
      },
    },
  );
}
