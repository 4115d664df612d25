// A lane's decode state on CUDA (src/codec/cuda/lane-state.ts), counted by hand for the real codec: what admission
// must reserve per lane slot for the codec. Runs without a GPU (the count is host arithmetic).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { laneStateBytes } from '../../src/codec/cuda/lane-state.ts';

test("a lane's codec state at the real geometry: rings, depthwise, decoder conv histories, 8.9 MB", () => {
  const rings = 8 * 2 * 128 * 1024; // post-module: keys and values of 128 positions × 1024 per layer
  const depthwise = 2 * 6 * 1024; // two ConvNeXt depthwise convs k7
  const first = 6 * 1024; // the decoder's first conv k7 on the latent
  // Each block: the transposed conv's one carried row at its input width, then units k7 at dilations 1, 3, 9.
  const blocks = [1536, 768, 384, 192].reduce((total, width) => total + width + 6 * (1 + 3 + 9) * (width / 2), 0);
  const last = 6 * 96; // the last conv k7
  assert.equal(laneStateBytes(REAL_CODEC_CONFIG), 4 * (rings + depthwise + first + blocks + last));
  assert.equal(laneStateBytes(REAL_CODEC_CONFIG), 8925440);
});
