// Conversions between float32 samples in [-1, 1] and signed 16-bit little-endian PCM bytes (mono).

/** Float32 → s16le bytes: round(x · 32768) clamped to [-32768, 32767], the inverse of the /32768 decoders use. */
export function floatToPcm16(samples: Float32Array): Uint8Array {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < samples.length; index++) {
    view.setInt16(index * 2, floatToInt16(samples[index]!), true);
  }
  return bytes;
}

/** One float sample → int16; NaN becomes 0 so a bad sample never turns into a full-scale click. */
export function floatToInt16(sample: number): number {
  if (Number.isNaN(sample)) return 0;
  const scaled = Math.round(sample * 32768);
  return Math.min(32767, Math.max(-32768, scaled));
}

/** s16le bytes → float32, dividing by 32768 (the usual decoder convention: -32768 maps to exactly -1). */
export function pcm16ToFloat(bytes: Uint8Array): Float32Array {
  const count = bytes.length >> 1;
  const samples = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let index = 0; index < count; index++) samples[index] = view.getInt16(index * 2, true) / 32768;
  return samples;
}

/** Joins byte chunks into one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  return joinInto(new Uint8Array(totalLength(chunks)), chunks);
}

/** Joins float chunks into one array. */
export function concatSamples(chunks: readonly Float32Array[]): Float32Array {
  return joinInto(new Float32Array(totalLength(chunks)), chunks);
}

function totalLength(chunks: readonly ArrayLike<number>[]): number {
  let total = 0;
  for (const chunk of chunks) total += chunk.length;
  return total;
}

/** Copies the chunks one after another into `joined` (their total length). */
function joinInto<T extends Uint8Array | Float32Array>(joined: T, chunks: readonly T[]): T {
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.length;
  }
  return joined;
}
