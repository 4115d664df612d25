// The CUDA codec encoder's launch sequence on the host side, without a GPU (nothing runs; downloads read zeros):
// every launch passes its launcher's checks and every conv carries the history slab its kernel and dilation need,
// long audio runs in passes of framesPerPass frames that each end in one quantizer encode over that pass's frames,
// every conv's input and output rows lie inside one allocation, and a failed creation frees what it made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { CudaCodecEncoder } from '../../src/codec/cuda/encoder.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { loadCodecWeights } from '../../src/codec/weights.ts';
import { codecDevice, observing } from './support/codec-recording.ts';

const config = TINY_CODEC_CONFIG;
const weights = loadCodecWeights(synthesizeCodecWeights(config, 7), config, 'synthetic codec');

test('40 frames in passes of 16: three passes, each ending in one quantizer encode over its frames', () => {
  const { cuda, regions } = codecDevice();
  const encoder = CudaCodecEncoder.create(cuda, config, weights, { framesPerPass: 16, precision: 'f32' });
  const { result: encoded, observed } = observing(() =>
    encoder.encode(new Float32Array(40 * config.frameLength - 100)),
  );
  assert.equal(encoded.frames.length, 40);
  assert.equal(encoded.margins.length, 40 * 10);
  const quantizers = observed.filter((launch) => launch.name === 'codec_quantizer_encode');
  assert.deepEqual(
    quantizers.map((launch) => launch.values[3]),
    [16, 16, 8],
  );
  assert.equal(observed.at(-1)!.name, 'codec_quantizer_encode');
  // Convs read x rows [rows, xStride] and write out rows [rows, outStride]: rows = frames of the pass × rowScale.
  const inside = (pointer: bigint, bytes: bigint) =>
    regions.some((region) => pointer >= region.pointer && pointer + bytes <= region.pointer + BigInt(region.bytes));
  let pass = 0;
  const passFrames = [16, 16, 8];
  let convs = 0;
  for (const { name, values } of observed) {
    if (name === 'codec_quantizer_encode') pass++;
    if (!name.startsWith('codec_conv')) continue;
    convs++;
    const [out, outStride, x, xStride] = values.slice(0, 4).map(BigInt) as [bigint, bigint, bigint, bigint];
    const [rowScale, inputs, outputs] = values.slice(12, 15) as [number, number, number];
    const rows = BigInt(passFrames[pass]! * rowScale);
    const what = `${name} #${convs} (pass ${pass}, ${inputs} → ${outputs}, ${rows} rows)`;
    assert.ok(inside(out, 4n * ((rows - 1n) * outStride + BigInt(outputs))), `${what}: out past its buffer`);
    assert.ok(inside(x, 4n * ((rows - 1n) * xStride + BigInt(inputs))), `${what}: x past its buffer`);
  }
  assert.ok(convs > 40, `${convs} convs`);
  encoder.close();
  assert.ok(
    regions.every((region) => region.freed),
    'close frees every allocation',
  );
});

test('a creation that fails part way frees everything it made, and bad pass sizes are refused by name', () => {
  for (const failAfter of [3, 40, 120]) {
    const { cuda, regions } = codecDevice(failAfter);
    assert.throws(
      () => CudaCodecEncoder.create(cuda, config, weights, { framesPerPass: 8, precision: 'f32' }),
      /planted/,
    );
    assert.ok(
      regions.every((region) => region.freed),
      `failing at allocation ${failAfter} leaks`,
    );
  }
  const { cuda } = codecDevice();
  for (const framesPerPass of [0, 1.5, 4096]) {
    assert.throws(() => CudaCodecEncoder.create(cuda, config, weights, { framesPerPass, precision: 'f32' }), {
      code: 'CODEC_PASS_FRAMES_INVALID',
    });
  }
});
