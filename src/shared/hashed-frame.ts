// The null model's frames: every code follows from one fixed, platform-independent hash, so tests of the scheduler,
// the server and the voice catalog get distinct, repeatable frames without any arithmetic of the model.
import { CODES_PER_FRAME, RESIDUAL_CODEBOOK_SIZE, SEMANTIC_CODEBOOK_SIZE } from './frame.ts';

/** 32-bit integer mix (murmur3 finaliser): a fixed, platform-independent hash. */
export function mix32(value: number): number {
  let h = value >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** A frame whose codes all follow from one hash: code[0] in 0..4095, code[1..9] in 0..1023. */
export function hashedFrame(hash: number): Int32Array {
  const frame = new Int32Array(CODES_PER_FRAME);
  let h = hash;
  for (let k = 0; k < CODES_PER_FRAME; k++) {
    h = mix32(h + k + 1);
    frame[k] = h % (k === 0 ? SEMANTIC_CODEBOOK_SIZE : RESIDUAL_CODEBOOK_SIZE);
  }
  return frame;
}
