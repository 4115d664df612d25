// WAV files built field by field, independently of src/audio/wav.ts, for the reader and upload tests.

/** A WAV file built field by field, independently of writeWav. */
export function handmadeWav(options: {
  channels?: number;
  sampleRate?: number;
  bits?: number;
  formatTag?: number;
  dataBytes?: number;
  declaredDataBytes?: number;
}): Uint8Array {
  const channels = options.channels ?? 1;
  const sampleRate = options.sampleRate ?? 16000;
  const bits = options.bits ?? 16;
  const dataBytes = options.dataBytes ?? 0;
  const bytes = new Uint8Array(44 + dataBytes);
  const view = new DataView(bytes.buffer);
  bytes.set(new TextEncoder().encode('RIFF'), 0);
  view.setUint32(4, 36 + dataBytes, true);
  bytes.set(new TextEncoder().encode('WAVEfmt '), 8);
  view.setUint32(16, 16, true);
  view.setUint16(20, options.formatTag ?? 1, true);
  view.setUint16(22, channels, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, (sampleRate * channels * bits) / 8, true);
  view.setUint16(32, (channels * bits) / 8, true);
  view.setUint16(34, bits, true);
  bytes.set(new TextEncoder().encode('data'), 36);
  view.setUint32(40, options.declaredDataBytes ?? dataBytes, true);
  return bytes;
}
