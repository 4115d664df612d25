// Test signals and the round-trip quality measure shared by the audio tests.

/** A voice-like test tone: three harmonics of 220 Hz with slow vibrato and tremolo, peak about 0.6. */
export function harmonicTone(sampleRate: number, seconds: number): Float32Array {
  const length = Math.round(sampleRate * seconds);
  const samples = new Float32Array(length);
  let phase = 0;
  for (let index = 0; index < length; index++) {
    const time = index / sampleRate;
    const frequency = 220 * (1 + 0.02 * Math.sin(2 * Math.PI * 5 * time));
    phase += (2 * Math.PI * frequency) / sampleRate;
    const envelope = 0.75 + 0.25 * Math.sin(2 * Math.PI * 3 * time);
    samples[index] = envelope * (0.35 * Math.sin(phase) + 0.15 * Math.sin(3 * phase) + 0.1 * Math.sin(6 * phase));
  }
  return samples;
}

/** Deterministic uniform noise in [-amplitude, amplitude) (xorshift32). */
export function noise(length: number, amplitude: number, seed = 12345): Float32Array {
  const samples = new Float32Array(length);
  let state = seed >>> 0 || 1;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    samples[index] = (state / 2 ** 32 - 0.5) * 2 * amplitude;
  }
  return samples;
}

/**
 * SNR in dB of `decoded` against `reference` after the best integer delay in [0, maxDelay] (codec priming) and
 * the least-squares gain (decoders differ on 1/32767 vs 1/32768), over the reference's middle 80 %.
 * The delay is searched by normalised correlation on a window of the middle, then the SNR uses the whole span.
 */
export function alignedSnr(
  reference: Float32Array,
  decoded: Float32Array,
  maxDelay: number,
): { snr: number; delay: number } {
  const start = Math.floor(reference.length * 0.1);
  const end = Math.floor(reference.length * 0.9);
  const searchEnd = Math.min(end, start + 4096);
  let delay = 0;
  let bestCorrelation = Number.NEGATIVE_INFINITY;
  for (let candidate = 0; candidate <= maxDelay && end + candidate <= decoded.length; candidate++) {
    let cross = 0;
    let energy = 0;
    for (let index = start; index < searchEnd; index++) {
      cross += reference[index]! * decoded[index + candidate]!;
      energy += decoded[index + candidate]! ** 2;
    }
    const correlation = cross / Math.sqrt(energy + 1e-30);
    if (correlation > bestCorrelation) {
      bestCorrelation = correlation;
      delay = candidate;
    }
  }
  let cross = 0;
  let decodedEnergy = 0;
  let referenceEnergy = 0;
  for (let index = start; index < end; index++) {
    cross += reference[index]! * decoded[index + delay]!;
    decodedEnergy += decoded[index + delay]! ** 2;
    referenceEnergy += reference[index]! ** 2;
  }
  const gain = decodedEnergy > 0 ? cross / decodedEnergy : 0;
  let errorEnergy = 0;
  for (let index = start; index < end; index++)
    errorEnergy += (reference[index]! - gain * decoded[index + delay]!) ** 2;
  return { snr: 10 * Math.log10(referenceEnergy / Math.max(errorEnergy, 1e-30)), delay };
}
