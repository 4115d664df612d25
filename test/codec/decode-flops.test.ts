import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { decodeFlopsPerFrame } from '../../src/codec/decode-flops.ts';

test('the real codec decode counts its convs layer by layer, on the order of 100 GFLOP per audio second (146)', () => {
  const flops = decodeFlopsPerFrame(REAL_CODEC_CONFIG);
  // Layer by layer at 4, 32, 256, 1024 and 2048 rows per frame (a residual unit: k7 then k1 conv).
  const decoder =
    2 * 4 * 1024 * 1536 * 7 +
    2 * 32 * (1536 * 768 * 2 + 3 * 768 * 768 * 8) +
    2 * 256 * (768 * 384 * 2 + 3 * 384 * 384 * 8) +
    2 * 1024 * (384 * 192 * 2 + 3 * 192 * 192 * 8) +
    2 * 2048 * (192 * 96 * 2 + 3 * 96 * 96 * 8) +
    2 * 2048 * 96 * 7;
  assert.equal(flops.decoder, decoder);
  // Two upsample stages at 2 and 4 rows per frame: transposed conv k = s (one tap per output row), ConvNeXt.
  const convNext = 7 * 1024 + 2 * 1024 * 4096;
  assert.equal(flops.upsample, 2 * 2 * (1024 * 1024 + convNext) + 2 * 4 * (1024 * 1024 + convNext));
  // Eight layers of q|k|v, o, w1|w3, w2 at 1024 wide (16 × 64 heads, 3072 hidden) and a 128-row window.
  assert.equal(flops.postModule, 2 * 8 * (1024 * 3072 + 1024 * 1024 + 1024 * 6144 + 3072 * 1024 + 2 * 128 * 1024));
  const perAudioSecond = (flops.total * REAL_CODEC_CONFIG.sampleRate) / REAL_CODEC_CONFIG.frameLength;
  assert.ok(perAudioSecond > 140e9 && perAudioSecond < 150e9, `${perAudioSecond / 1e9} GFLOP per audio second`);
});
