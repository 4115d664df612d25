import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { downmix } from '../../src/audio/decode.ts';
import { writeWav } from '../../src/audio/wav.ts';
import { framesToNpy, registerEncode } from '../../src/cli/encode.ts';
import { codecConfigToJson } from '../../src/codec/config.ts';
import { encodeReferenceAudio, loadCheckpointCodec } from '../../src/codec/reference.ts';
import { DramaError } from '../../src/errors.ts';
import { FIXTURE_DIR, fixtureConfig, fixtureFloats, fixtureFrames } from './oracle-fixture.ts';

async function checkpointDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'codec-checkpoint-'));
  await copyFile(join(FIXTURE_DIR, 'codec.pth'), join(dir, 'codec.pth'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ codec_config: codecConfigToJson(fixtureConfig) }));
  return dir;
}

/** Reads an .npy of int32 [K, F] independently of the writer: magic, header dict, then little-endian data. */
function readNpy(bytes: Uint8Array): { shape: number[]; values: Int32Array } {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x93, 78, 85, 77, 80, 89, 1, 0]);
  const headerLength = bytes[8]! + 256 * bytes[9]!;
  assert.equal((10 + headerLength) % 64, 0);
  const header = Buffer.from(bytes.subarray(10, 10 + headerLength)).toString('latin1');
  assert.match(header, /'descr': '<i4'/);
  assert.match(header, /'fortran_order': False/);
  const shape = /'shape': \((\d+), (\d+)\)/.exec(header)!.slice(1).map(Number);
  const data = bytes.slice(10 + headerLength);
  return { shape, values: new Int32Array(data.buffer, data.byteOffset, data.byteLength / 4) };
}

test('drama3 encode writes the fixture codes of a 44.1 kHz WAV as int32 [10, F]', async () => {
  const dir = await checkpointDir();
  try {
    const wavPath = join(dir, 'ref.wav');
    const outPath = join(dir, 'codes.npy');
    await writeFile(wavPath, writeWav(fixtureFloats('encode.audio'), 44100, { bits: 32 }));
    const program = new Command().exitOverride();
    registerEncode(program);
    await program.parseAsync(['encode', '--audio', wavPath, '--out', outPath, '--model', dir], { from: 'user' });
    const { shape, values } = readNpy(new Uint8Array(await readFile(outPath)));
    const expected = fixtureFrames('encode.codes');
    assert.deepEqual(shape, [10, expected.length]);
    expected.forEach((frame, index) => {
      frame.forEach((code, codebook) => {
        assert.equal(values[codebook * expected.length + index], code);
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('framesToNpy lays codes out codebook-major', () => {
  const { shape, values } = readNpy(framesToNpy([Int32Array.of(1, 2, 3), Int32Array.of(4, 5, -6)], 3));
  assert.deepEqual(shape, [3, 2]);
  assert.deepEqual([...values], [1, 4, 2, 5, 3, -6]);
});

test('stereo references are downmixed and other rates resampled before encoding', async () => {
  const dir = await checkpointDir();
  try {
    const codec = await loadCheckpointCodec(dir);
    const left = fixtureFloats('encode.audio').subarray(0, 8192);
    const right = left.map((sample) => -0.5 * sample);
    const mixed = downmix([left, right]);
    assert.equal(mixed[100], Math.fround((left[100]! + right[100]!) / 2));
    assert.deepEqual(encodeReferenceAudio(codec, [left, right], 44100), codec.encode(mixed));
    const slow = encodeReferenceAudio(codec, [left], 22050);
    assert.equal(slow.length, Math.ceil((2 * left.length) / 2048));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a checkpoint folder without config.json is refused by name', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'codec-empty-'));
  try {
    await assert.rejects(loadCheckpointCodec(dir), (error: unknown) => {
      assert.ok(error instanceof DramaError);
      assert.equal(error.code, 'CODEC_CONFIG_UNREADABLE');
      return true;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
