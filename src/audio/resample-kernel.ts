// The windowed-sinc kernel of torchaudio.functional.resample (sinc_interp_hann, lowpass_filter_width 6,
// rolloff 0.99) for a float32 waveform. Rates are reduced by their gcd to (orig, next); phase p (0 ≤ p < next)
// of output block b reads input x[b·orig + k − width] for k in [0, 2·width + orig).
// Every step is rounded to float32 in torch's order, because torch builds the kernel in the waveform's dtype
// and the float32 kernel differs from the exact one by up to a few 1e-6 at the output.
// Taps whose argument torch clamps to ±6 carry weights below 1e-20 and are dropped: each phase keeps only its
// contiguous run of unclamped taps, so uneven rates (gcd 1) cost memory per phase, not per input sample.
import { DramaError } from '../errors.ts';

const LOWPASS_FILTER_WIDTH = 6;
const ROLLOFF = 0.99;
/** Highest rate accepted by the resampler (Hz). */
const MAX_RESAMPLE_RATE = 1_000_000;
/** Taps kept across all phases; above this a rate pair is refused rather than built. */
const MAX_KERNEL_TAPS = 8_000_000;
const CACHE_ENTRIES = 16;

export interface ResampleKernel {
  /** Input rate divided by gcd(from, to). */
  readonly orig: number;
  /** Output rate divided by gcd(from, to). */
  readonly next: number;
  /** Zeros torchaudio pads on the left (and width + orig on the right). */
  readonly width: number;
  /** Per phase: the first kept k. */
  readonly firstTap: Int32Array;
  /** Per phase: where its weights start in `weights`. */
  readonly weightStart: Int32Array;
  /** Per phase: how many consecutive taps it keeps. */
  readonly tapCount: Int32Array;
  /** All kept weights (float32 values held as float64 for the float64 sums). */
  readonly weights: Float64Array;
}

const cache = new Map<string, ResampleKernel>();

function greatestCommonDivisor(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

export function checkSampleRate(rate: number, param: string): void {
  if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RESAMPLE_RATE) {
    throw new DramaError(
      'AUDIO_BAD_SAMPLE_RATE',
      `sample rate ${rate} is not an integer between 1 and ${MAX_RESAMPLE_RATE} Hz`,
      { param },
    );
  }
}

/** The kernel for one rate pair, built once and cached (a few entries). */
export function resampleKernel(fromRate: number, toRate: number): ResampleKernel {
  checkSampleRate(fromRate, 'fromRate');
  checkSampleRate(toRate, 'toRate');
  const divisor = greatestCommonDivisor(fromRate, toRate);
  const orig = fromRate / divisor;
  const next = toRate / divisor;
  const key = `${orig}:${next}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const kernel = buildKernel(orig, next, fromRate, toRate);
  if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(key, kernel);
  return kernel;
}

function buildKernel(orig: number, next: number, fromRate: number, toRate: number): ResampleKernel {
  const f = Math.fround;
  // Python floats until the tensors start; a Python float times a float32 tensor is taken in float32.
  const baseFreq = Math.min(orig, next) * ROLLOFF;
  const width = Math.ceil((LOWPASS_FILTER_WIDTH * orig) / baseFreq);
  const halfSpan = (LOWPASS_FILTER_WIDTH * orig) / baseFreq;
  const estimatedTaps = next * (Math.ceil(2 * halfSpan) + 6);
  if (estimatedTaps > MAX_KERNEL_TAPS) {
    throw new DramaError(
      'AUDIO_RESAMPLE_UNSUPPORTED',
      `resampling ${fromRate} Hz to ${toRate} Hz needs about ${estimatedTaps} filter taps (limit ${MAX_KERNEL_TAPS}); ` +
        'use rates with a larger common divisor',
      { param: 'sample_rate' },
    );
  }
  const baseF = f(baseFreq);
  const scaleF = f(baseFreq / orig);
  const piF = f(Math.PI);
  const kernelLength = 2 * width + orig;
  const firstTap = new Int32Array(next);
  const weightStart = new Int32Array(next);
  const tapCount = new Int32Array(next);
  const weights: number[] = [];
  for (let phase = 0; phase < next; phase++) {
    // torch.arange(0, -next, -1, float32) / next
    const phaseTime = f(-phase / next);
    const center = width + (orig * phase) / next;
    const low = Math.max(0, Math.floor(center - halfSpan) - 2);
    const high = Math.min(kernelLength - 1, Math.ceil(center + halfSpan) + 2);
    weightStart[phase] = weights.length;
    let first = -1;
    for (let k = low; k <= high; k++) {
      // torch.arange(-width, width + orig, float32) / orig, plus the phase, times base_freq
      const t = f(f(phaseTime + f((k - width) / orig)) * baseF);
      if (!(t > -LOWPASS_FILTER_WIDTH && t < LOWPASS_FILTER_WIDTH)) {
        if (first >= 0) break;
        continue;
      }
      if (first < 0) first = k;
      // torch.cos(t * pi / 6 / 2) ** 2
      const cosine = f(Math.cos(f(f(f(t * piF) / LOWPASS_FILTER_WIDTH) / 2)));
      const window = f(cosine * cosine);
      const angle = f(t * piF);
      const sinc = angle === 0 ? 1 : f(f(Math.sin(angle)) / angle);
      // kernels *= window * scale
      weights.push(f(sinc * f(window * scaleF)));
    }
    firstTap[phase] = first;
    tapCount[phase] = weights.length - weightStart[phase]!;
  }
  return { orig, next, width, firstTap, weightStart, tapCount, weights: Float64Array.from(weights) };
}

/** Output length torchaudio keeps: ceil(next · length / orig) in double precision, as Python computes it. */
export function resampledLength(length: number, kernel: ResampleKernel): number {
  return Math.ceil((kernel.next * length) / kernel.orig);
}
