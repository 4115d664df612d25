// The WSOLA time stretch behind `speed`: about length / speed samples, the pitch kept (a tone's zero crossings per
// second unchanged), and chunked pushes equal to one whole call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TimeStretch } from '../../src/audio/time-stretch.ts';

const RATE = 44100;
const tone = (frequency: number, seconds: number) =>
  Float32Array.from(
    { length: Math.round(seconds * RATE) },
    (_, index) => 0.5 * Math.sin((2 * Math.PI * frequency * index) / RATE),
  );

function whole(stretch: TimeStretch, input: Float32Array): Float32Array {
  const head = stretch.push(input);
  const tail = stretch.flush();
  const out = new Float32Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

/** Frequency from upward zero crossings over the middle of the signal (away from the edges). */
function frequencyOf(samples: Float32Array): number {
  const from = Math.floor(samples.length * 0.2);
  const to = Math.floor(samples.length * 0.8);
  let crossings = 0;
  for (let index = from + 1; index < to; index++) if (samples[index - 1]! < 0 && samples[index]! >= 0) crossings += 1;
  return (crossings * RATE) / (to - from);
}

for (const speed of [0.5, 0.8, 1.5, 2, 4]) {
  test(`speed ${speed}: length / speed samples and the pitch of a 220 Hz tone kept`, () => {
    const input = tone(220, 2);
    const out = whole(new TimeStretch(speed), input);
    assert.equal(out.length, Math.round(input.length / speed));
    const frequency = frequencyOf(out);
    assert.ok(Math.abs(frequency - 220) < 3, `${frequency} Hz after stretching by ${speed}`);
    const peak = out.reduce((max, value) => Math.max(max, Math.abs(value)), 0);
    assert.ok(peak > 0.45 && peak < 0.55, `peak ${peak}`);
  });
}

test('chunked pushes give exactly the samples of one whole call', () => {
  const input = tone(330, 1.3);
  const expected = whole(new TimeStretch(1.7), input);
  const stretch = new TimeStretch(1.7);
  const parts: Float32Array[] = [];
  for (let offset = 0, size = 1; offset < input.length; offset += size, size = (size * 7) % 3001) {
    parts.push(stretch.push(input.subarray(offset, offset + size)));
  }
  parts.push(stretch.flush());
  const joined = new Float32Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  assert.deepEqual(joined, expected);
});
