// The resampler against torchaudio.functional.resample outputs dumped by tools/oracle/resample.py
// (torch/torchaudio 2.11, CPU, float32), and the streaming contract: pushes + flush = one whole call.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createResampler, resample } from '../../src/audio/resample.ts';
import { resampleKernel } from '../../src/audio/resample-kernel.ts';
import { isDramaError } from '../../src/errors.ts';
import { noise } from './signals.ts';

const FIXTURES = new URL('../fixtures/audio/resample/', import.meta.url);

interface FixtureCase {
  name: string;
  fromRate: number;
  toRate: number;
  inputLength: number;
  outputLength: number;
  files: { input: string; float32: string; float64: string };
}

function loadFloats(name: string): Float32Array {
  const bytes = readFileSync(new URL(name, FIXTURES));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

function maxAbsDifference(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let index = 0; index < a.length; index++) worst = Math.max(worst, Math.abs(a[index]! - b[index]!));
  return worst;
}

const manifest = JSON.parse(readFileSync(new URL('manifest.json', FIXTURES), 'utf8')) as { cases: FixtureCase[] };

describe('resample matches torchaudio', () => {
  it('covers the four rate pairs on a chirp and on noise', () => {
    const pairs = new Set(manifest.cases.map((item) => `${item.fromRate}->${item.toRate}`));
    assert.deepEqual([...pairs].sort(), ['16000->44100', '24000->44100', '44100->24000', '48000->44100']);
    assert.equal(manifest.cases.length, 8);
  });

  for (const item of manifest.cases) {
    it(`${item.name}: within 1e-6 of torchaudio (float32)`, () => {
      const input = loadFloats(item.files.input);
      const expected = loadFloats(item.files.float32);
      assert.equal(input.length, item.inputLength);
      const output = resample(input, item.fromRate, item.toRate);
      assert.equal(output.length, expected.length, 'output length (ceil(new * length / orig))');
      const worst = maxAbsDifference(output, expected);
      assert.ok(worst <= 1e-6, `max |ours - torchaudio| = ${worst}`);
    });
  }

  it('follows torch float32 kernel rounding: the float64 result is further away than the bound', () => {
    // torch builds the kernel in the waveform's dtype; an exact kernel would miss the 1e-6 bound on these cases.
    const item = manifest.cases.find((entry) => entry.name === 'chirp_16000_44100')!;
    const output = resample(loadFloats(item.files.input), item.fromRate, item.toRate);
    assert.ok(maxAbsDifference(output, loadFloats(item.files.float64)) > 2e-6);
    assert.ok(maxAbsDifference(output, loadFloats(item.files.float32)) < 1e-6);
  });
});

describe('the formula, sample for sample', () => {
  // y[j] = Σ_k kernel[p][k] · x[b·orig + k − width] with j = b·next + p, x zero outside, summed in float64 in tap order
  // and rounded to float32 once: the resampler's blocks, phases and edges must give exactly these samples.
  for (const [fromRate, toRate] of [
    [44100, 24000],
    [24000, 44100],
    [16000, 44100],
  ] as const) {
    it(`${fromRate} -> ${toRate}: every sample equals the formula's, bit for bit`, () => {
      const input = noise(5000, 0.5);
      const { orig, next, width, firstTap, weightStart, tapCount, weights } = resampleKernel(fromRate, toRate);
      const output = resample(input, fromRate, toRate);
      for (let j = 0; j < output.length; j++) {
        const block = Math.floor(j / next);
        const phase = j - block * next;
        const first = block * orig + firstTap[phase]! - width;
        let sum = 0;
        for (let tap = 0; tap < tapCount[phase]!; tap++) {
          const index = first + tap;
          if (index >= 0 && index < input.length) sum += weights[weightStart[phase]! + tap]! * input[index]!;
        }
        assert.ok(Object.is(output[j], Math.fround(sum)), `sample ${j}: ${output[j]} against ${Math.fround(sum)}`);
      }
    });
  }
});

describe('streaming resampler', () => {
  for (const [fromRate, toRate] of [
    [44100, 24000],
    [24000, 44100],
    [48000, 44100],
    [44101, 48000],
  ] as const) {
    it(`${fromRate} -> ${toRate}: pushes of odd sizes plus flush equal one whole call, bit for bit`, () => {
      const input = noise(9000, 0.5);
      const whole = resample(input, fromRate, toRate);
      const resampler = createResampler(fromRate, toRate);
      const pieces: number[] = [];
      let offset = 0;
      let size = 1;
      while (offset < input.length) {
        const end = Math.min(input.length, offset + size);
        pieces.push(...resampler.push(input.subarray(offset, end)));
        offset = end;
        size = ((size * 7 + 3) % 1500) + 1;
      }
      pieces.push(...resampler.flush());
      assert.equal(pieces.length, whole.length);
      assert.ok(
        pieces.every((value, index) => Object.is(value, whole[index])),
        'streamed samples differ from the whole call',
      );
      assert.equal(whole.length, Math.ceil((toRate * input.length) / fromRate));
    });
  }

  it('returns the input unchanged when the rates are equal', () => {
    const input = noise(100, 0.5);
    assert.deepEqual(resample(input, 24000, 24000), input);
  });

  it('emits nothing for empty input and nothing after flush', () => {
    const resampler = createResampler(44100, 24000);
    assert.equal(resampler.push(new Float32Array(0)).length, 0);
    assert.equal(resampler.flush().length, 0);
    assert.equal(resampler.flush().length, 0);
  });

  for (const [fromRate, toRate] of [
    [0, 44100],
    [44100, 1.5],
    [-8000, 16000],
    [44100, 5_000_000],
  ] as const) {
    it(`refuses ${fromRate} -> ${toRate} Hz with AUDIO_BAD_SAMPLE_RATE`, () => {
      assert.throws(
        () => createResampler(fromRate, toRate),
        (error) => isDramaError(error) && error.code === 'AUDIO_BAD_SAMPLE_RATE',
      );
    });
  }

  it('refuses a rate pair whose kernel would be too large with AUDIO_RESAMPLE_UNSUPPORTED', () => {
    assert.throws(
      () => createResampler(999_983, 999_979),
      (error) => isDramaError(error) && error.code === 'AUDIO_RESAMPLE_UNSUPPORTED',
    );
  });
});
