// Conversions against hand-computed edge values (ties, subnormals, ±0, NaN, ±Inf, saturation) and against torch's
// own rounding of ~1200 values (test/fixtures/checkpoint/dtype-oracle.json, made by tools/oracle/torch_save.py).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  bf16BitsToFloat32,
  e4m3BitsToFloat32,
  f16BitsToFloat32,
  float32Bits,
  float32FromBits,
  float32ToBf16Bits,
  float32ToE4m3Bits,
  float32ToF16Bits,
  roundArrayToBf16,
  roundToBf16,
  roundToE4m3,
  roundToF16,
} from '../../src/numeric/dtypes.ts';

const hex = (value: number): string => `0x${value.toString(16)}`;

function expectBits(convert: (x: number) => number, cases: readonly [number, number][]): void {
  for (const [input, expected] of cases) {
    assert.equal(hex(convert(input)), hex(expected), `input ${input} (f32 ${hex(float32Bits(input))})`);
  }
}

describe('bf16', () => {
  it('rounds to nearest even, keeping signs, Inf and NaN', () => {
    expectBits(float32ToBf16Bits, [
      [1, 0x3f80],
      [0, 0x0000],
      [-0, 0x8000],
      [Number.POSITIVE_INFINITY, 0x7f80],
      [Number.NEGATIVE_INFINITY, 0xff80],
      [Number.NaN, 0x7fc0],
      [float32FromBits(0x3f808000), 0x3f80], // tie, kept bit even: down
      [float32FromBits(0x3f818000), 0x3f82], // tie, kept bit odd: up
      [float32FromBits(0x3f808001), 0x3f81], // just above the tie
      [float32FromBits(0xbf818000), 0xbf82], // negative tie rounds away from zero to even
      [float32FromBits(0x7f7f7fff), 0x7f7f], // just below the overflow tie
      [float32FromBits(0x7f7f8000), 0x7f80], // tie at the largest finite (odd): overflows to Inf
      [float32FromBits(0x00000001), 0x0000], // smallest f32 subnormal rounds to +0
      [float32FromBits(0x00008000), 0x0000], // subnormal tie, even
      [float32FromBits(0x00018000), 0x0002], // subnormal tie, odd
      [float32FromBits(0x00010000), 0x0001], // smallest bf16 subnormal, exact
    ]);
  });

  it('widens exactly', () => {
    assert.equal(bf16BitsToFloat32(0x0001), 2 ** -133);
    assert.equal(bf16BitsToFloat32(0x7f7f), float32FromBits(0x7f7f0000));
    assert.ok(Object.is(bf16BitsToFloat32(0x8000), -0));
    assert.equal(bf16BitsToFloat32(0xff80), Number.NEGATIVE_INFINITY);
    assert.ok(Number.isNaN(bf16BitsToFloat32(0x7fc0)));
    assert.equal(roundToBf16(1 / 3), 0.333984375);
  });

  it('rounds a JS number to float32 first', () => {
    // 1 + 2^-8 + 2^-30 is 1 + 2^-8 in float32, an exact bf16 tie that rounds down to even.
    assert.equal(roundToBf16(1 + 2 ** -8 + 2 ** -30), 1);
  });

  it('round-trips every bf16 value', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = bf16BitsToFloat32(bits);
      if (!Number.isNaN(value)) assert.equal(float32ToBf16Bits(value), bits);
    }
  });

  it('rounds arrays in place exactly as the scalar form', () => {
    const inputs = new Uint32Array(4096);
    let state = 12345;
    for (let index = 0; index < inputs.length; index++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      inputs[index] = index < 16 ? [0x7f800001, 0xff800000, 0x80000000, 0x3f808000][index % 4]! : state;
    }
    const values = new Float32Array(inputs.buffer.slice(0));
    roundArrayToBf16(values);
    for (let index = 0; index < inputs.length; index++) {
      const expected = float32ToBf16Bits(float32FromBits(inputs[index]!));
      assert.equal(hex(float32Bits(values[index]!) >>> 16), hex(expected), `element ${index}`);
    }
  });
});

describe('f16', () => {
  it('rounds to nearest even through subnormals, overflow and NaN', () => {
    expectBits(float32ToF16Bits, [
      [1, 0x3c00],
      [-2, 0xc000],
      [-0, 0x8000],
      [65504, 0x7bff],
      [65519.99, 0x7bff],
      [65520, 0x7c00], // tie at the largest finite (odd mantissa): overflows to Inf
      [1e6, 0x7c00],
      [Number.NEGATIVE_INFINITY, 0xfc00],
      [Number.NaN, 0x7e00],
      [-Number.NaN, 0xfe00],
      [1 + 2 ** -11, 0x3c00], // tie, even
      [1 + 3 * 2 ** -11, 0x3c02], // tie, odd
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie with zero: even
      [1.5 * 2 ** -24, 0x0002], // subnormal tie, odd: up
      [2.5 * 2 ** -24, 0x0002], // subnormal tie, even: down
      [-(2 ** -24), 0x8001],
      [-(2 ** -26), 0x8000], // underflows to -0
      [1023 * 2 ** -24, 0x03ff], // largest subnormal
      [1023.5 * 2 ** -24, 0x0400], // tie into the smallest normal
      [2 ** -14, 0x0400],
    ]);
  });

  it('widens exactly', () => {
    assert.equal(f16BitsToFloat32(0x0001), 2 ** -24);
    assert.equal(f16BitsToFloat32(0x7bff), 65504);
    assert.equal(f16BitsToFloat32(0x3555), 0.333251953125);
    assert.ok(Object.is(f16BitsToFloat32(0x8000), -0));
    assert.equal(f16BitsToFloat32(0xfc00), Number.NEGATIVE_INFINITY);
    assert.ok(Number.isNaN(f16BitsToFloat32(0x7c01)));
    assert.equal(roundToF16(0.1), 0.0999755859375);
  });

  it('round-trips every f16 value', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = f16BitsToFloat32(bits);
      if (!Number.isNaN(value)) assert.equal(float32ToF16Bits(value), bits);
    }
  });
});

describe('e4m3', () => {
  it('rounds to nearest even and saturates to ±448', () => {
    expectBits(float32ToE4m3Bits, [
      [1, 0x38],
      [0, 0x00],
      [-0, 0x80],
      [448, 0x7e],
      [449, 0x7e],
      [1e9, 0x7e],
      [Number.POSITIVE_INFINITY, 0x7e],
      [Number.NEGATIVE_INFINITY, 0xfe],
      [-500, 0xfe],
      [Number.NaN, 0x7f],
      [-Number.NaN, 0xff],
      [416, 0x7d],
      [424, 0x7d],
      [432, 0x7e], // tie between 416 (odd) and 448
      [1.0625, 0x38], // tie, even
      [1.1875, 0x3a], // tie, odd
      [2 ** -6, 0x08], // smallest normal
      [2 ** -9, 0x01], // smallest subnormal
      [2 ** -10, 0x00], // tie with zero
      [3 * 2 ** -10, 0x02], // subnormal tie, odd: up
      [7.5 * 2 ** -9, 0x08], // tie into the smallest normal
      [-(2 ** -11), 0x80],
    ]);
  });

  it('widens exactly', () => {
    assert.equal(e4m3BitsToFloat32(0x7e), 448);
    assert.equal(e4m3BitsToFloat32(0xfe), -448);
    assert.equal(e4m3BitsToFloat32(0x01), 0.001953125);
    assert.equal(e4m3BitsToFloat32(0x07), 7 * 2 ** -9);
    assert.equal(e4m3BitsToFloat32(0x08), 0.015625);
    assert.equal(e4m3BitsToFloat32(0x78), 256); // exponent 15 with mantissa 0 is a number, not Inf
    assert.ok(Object.is(e4m3BitsToFloat32(0x80), -0));
    assert.ok(Number.isNaN(e4m3BitsToFloat32(0x7f)));
    assert.ok(Number.isNaN(e4m3BitsToFloat32(0xff)));
    assert.equal(roundToE4m3(0.1), 0.1015625);
  });

  it('round-trips every e4m3 value', () => {
    for (let bits = 0; bits < 256; bits++) {
      const value = e4m3BitsToFloat32(bits);
      if (!Number.isNaN(value)) assert.equal(float32ToE4m3Bits(value), bits);
    }
  });
});

describe('against torch', () => {
  const oracle = JSON.parse(
    readFileSync(new URL('../fixtures/checkpoint/dtype-oracle.json', import.meta.url), 'utf8'),
  ) as Record<string, number[]>;
  const inputs = oracle.f32_bits!;
  const isNaN16 = (bits: number, exponentBits: number, mantissaBits: number): boolean =>
    (bits >>> mantissaBits) % (1 << exponentBits) === (1 << exponentBits) - 1 && bits % (1 << mantissaBits) !== 0;

  it('agrees on bf16 and f16 rounding (NaN payloads aside)', () => {
    assert.ok(inputs.length > 1000);
    inputs.forEach((bits, index) => {
      const x = float32FromBits(bits);
      if (Number.isNaN(x)) {
        assert.ok(isNaN16(oracle.bf16_bits![index]!, 8, 7) && isNaN16(oracle.f16_bits![index]!, 5, 10));
        return;
      }
      assert.equal(hex(float32ToBf16Bits(x)), hex(oracle.bf16_bits![index]!), `bf16 of f32 ${hex(bits)}`);
      assert.equal(hex(float32ToF16Bits(x)), hex(oracle.f16_bits![index]!), `f16 of f32 ${hex(bits)}`);
    });
  });

  it('agrees on e4m3 rounding of clamped inputs, and with plain torch wherever torch gives a number', () => {
    inputs.forEach((bits, index) => {
      const ours = float32ToE4m3Bits(float32FromBits(bits));
      assert.equal(hex(ours), hex(oracle.e4m3_bits_saturated![index]!), `e4m3 of f32 ${hex(bits)}`);
      const plain = oracle.e4m3_bits_torch![index]!;
      if ((plain & 0x7f) !== 0x7f) assert.equal(hex(ours), hex(plain), `plain e4m3 of f32 ${hex(bits)}`);
    });
  });

  it('agrees on widening all 256 e4m3 patterns', () => {
    oracle.e4m3_decode_f32_bits!.forEach((bits, pattern) => {
      const ours = e4m3BitsToFloat32(pattern);
      if (Number.isNaN(ours)) assert.ok(Number.isNaN(float32FromBits(bits)));
      else assert.equal(hex(float32Bits(ours)), hex(bits), `pattern ${hex(pattern)}`);
    });
  });
});
