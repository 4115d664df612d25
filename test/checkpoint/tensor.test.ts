import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dtypeByteSize,
  float32ToTensor,
  int32ToTensor,
  makeTensor,
  tensorToFloat32,
  tensorToInt32,
} from '../../src/checkpoint/tensor.ts';
import { DramaError } from '../../src/errors.ts';

const values = Float32Array.from([1, -2.5, 0, -0, 65504, 2 ** -24, 448, -448, 0.1]);

function bytesOf(...bytes: number[]): Uint8Array {
  return Uint8Array.from(bytes);
}

describe('host tensors', () => {
  it('knows each dtype size', () => {
    assert.deepEqual(
      (['BF16', 'F16', 'F32', 'F8_E4M3', 'I64', 'I32', 'U8'] as const).map(dtypeByteSize),
      [2, 2, 4, 1, 8, 4, 1],
    );
  });

  it('writes little-endian bit patterns for each float dtype', () => {
    const sample = Float32Array.from([1, -2.5, 0.1]);
    // bf16: 0x3f80, 0xc020, 0x3dcd (0.1 = 0x3dcccccd rounds up); f16: 0x3c00, 0xc100, 0x2e66; e4m3: 0x38, 0xc2, 0x1d
    assert.deepEqual(float32ToTensor(sample, 'BF16', [3]).data, bytesOf(0x80, 0x3f, 0x20, 0xc0, 0xcd, 0x3d));
    assert.deepEqual(float32ToTensor(sample, 'F16', [3]).data, bytesOf(0x00, 0x3c, 0x00, 0xc1, 0x66, 0x2e));
    assert.deepEqual(float32ToTensor(sample, 'F8_E4M3', [3]).data, bytesOf(0x38, 0xc2, 0x1d));
    assert.deepEqual(float32ToTensor(sample, 'F32', [3]).data, new Uint8Array(sample.buffer));
  });

  it('widens each float dtype exactly', () => {
    const f32 = tensorToFloat32(float32ToTensor(values, 'F32', [3, 3]));
    assert.deepEqual([...f32], [...values]);
    const bf16 = tensorToFloat32(float32ToTensor(values, 'BF16', [9]));
    assert.deepEqual([...bf16], [1, -2.5, 0, -0, 65536, 2 ** -24, 448, -448, 0.10009765625]);
    const f16 = tensorToFloat32(float32ToTensor(values, 'F16', [9]));
    assert.deepEqual([...f16], [1, -2.5, 0, -0, 65504, 2 ** -24, 448, -448, 0.0999755859375]);
    const e4m3 = tensorToFloat32(float32ToTensor(values, 'F8_E4M3', [9]));
    assert.deepEqual([...e4m3], [1, -2.5, 0, -0, 448, 0, 448, -448, 0.1015625]);
    assert.ok(Object.is(e4m3[3], -0));
  });

  it('reads data that starts at an odd byte offset', () => {
    const backing = new Uint8Array(1 + 2 * 2);
    backing.set(bytesOf(0x80, 0x3f, 0x20, 0xc0), 1);
    const tensor = makeTensor('BF16', [2], backing.subarray(1));
    assert.deepEqual([...tensorToFloat32(tensor)], [1, -2.5]);
    const wide = new Uint8Array(1 + 8);
    wide.set(bytesOf(5, 0, 0, 0, 0, 0, 0, 0), 1);
    assert.deepEqual([...tensorToInt32(makeTensor('I64', [1], wide.subarray(1)))], [5]);
  });

  it('converts integer tensors both ways', () => {
    assert.deepEqual([...tensorToInt32(int32ToTensor([0, -1, 2147483647], 'I64', [3]))], [0, -1, 2147483647]);
    assert.deepEqual([...tensorToInt32(int32ToTensor([3, -4], 'I32', [2]))], [3, -4]);
    assert.deepEqual([...tensorToInt32(int32ToTensor([0, 255], 'U8', [2]))], [0, 255]);
    assert.deepEqual(int32ToTensor([-2], 'I64', [1]).data, bytesOf(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
  });

  it('refuses by name: size mismatch, bad shape, out-of-range integers, wrong kind', () => {
    const refused = (code: string) => (error: unknown) => error instanceof DramaError && error.code === code;
    assert.throws(() => makeTensor('F32', [2, 2], new Uint8Array(12)), refused('TENSOR_SIZE_MISMATCH'));
    assert.throws(() => makeTensor('F32', [-1], new Uint8Array(0)), refused('TENSOR_BAD_SHAPE'));
    assert.throws(() => float32ToTensor(values, 'F32', [2]), refused('TENSOR_SIZE_MISMATCH'));
    const big = makeTensor('I64', [1], bytesOf(0, 0, 0, 0, 1, 0, 0, 0));
    assert.throws(() => tensorToInt32(big), refused('TENSOR_VALUE_OUT_OF_RANGE'));
    assert.throws(() => int32ToTensor([256], 'U8', [1]), refused('TENSOR_VALUE_OUT_OF_RANGE'));
    assert.throws(() => tensorToFloat32(big), refused('TENSOR_NOT_FLOAT'));
    assert.throws(() => tensorToInt32(float32ToTensor(values, 'F32', [9])), refused('TENSOR_NOT_INTEGER'));
  });
});
