// The reference voices and text the reference-cache tests share (cpu and CUDA): frames drawn from a salt, two voices
// of different lengths, one text after them.
import type { EncodedReference } from '../../src/engine/runtime.ts';
import type { Frame } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';

export function referenceFrames(count: number, salt: number): Frame[] {
  return Array.from({ length: count }, (_, row) => {
    const frame = new Int32Array(CODES_PER_FRAME);
    for (let k = 0; k < CODES_PER_FRAME; k++) frame[k] = (row * 131 + k * 37 + salt * 977) % (k === 0 ? 4096 : 1024);
    return frame;
  });
}

export const VOICE_A: EncodedReference = { text: 'This is the first reference voice.', frames: referenceFrames(30, 1) };
export const VOICE_B: EncodedReference = {
  text: 'A second voice, speaking differently.',
  frames: referenceFrames(24, 2),
};
export const TEXT = 'Hello from the cache test.';
