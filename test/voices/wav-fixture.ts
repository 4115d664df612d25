// Small WAV files for voice tests: 16-bit PCM mono of a tone, written by hand (independent of the audio module).

export function toneWav(seconds: number, sampleRate = 24000, frequency = 220): Uint8Array {
  const samples = Math.round(seconds * sampleRate);
  const out = Buffer.alloc(44 + 2 * samples);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + 2 * samples, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(2 * sampleRate, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(2 * samples, 40);
  for (let index = 0; index < samples; index++)
    out.writeInt16LE(Math.round(12000 * Math.sin((2 * Math.PI * frequency * index) / sampleRate)), 44 + 2 * index);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}
