// The portable exp and log: within a few ulps of Math.exp / Math.log over their whole ranges, exact at the edges.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { expCoefficients, logCoefficients, portableExp, portableLog } from '../../src/numeric/portable-math.ts';

function ulpsApart(a: number, b: number): number {
  if (a === b) return 0;
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  return Math.abs(Number(view.getBigInt64(0) - view.getBigInt64(8)));
}

function samples(low: number, high: number, count: number): number[] {
  let state = 12345;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return low + ((high - low) * state) / 2 ** 32;
  });
}

test('portableExp stays within 2 ulps of Math.exp from −745 to 709', (t) => {
  let worst = 0;
  for (const x of [...samples(-745, 709, 20000), ...samples(-1, 1, 20000), ...samples(-40, 0, 20000)]) {
    const expected = Math.exp(x);
    if (expected < 2.2250738585072014e-308) continue;
    worst = Math.max(worst, ulpsApart(portableExp(x), expected));
  }
  t.diagnostic(`worst exp error ${worst} ulps`);
  assert.ok(worst <= 2, `worst ${worst} ulps`);
});

test('portableExp edges: 0 → 1, −Inf → 0, +Inf → +Inf, NaN → NaN, deep negatives underflow to 0', () => {
  assert.equal(portableExp(0), 1);
  assert.equal(portableExp(Number.NEGATIVE_INFINITY), 0);
  assert.equal(portableExp(Number.POSITIVE_INFINITY), Number.POSITIVE_INFINITY);
  assert.ok(Number.isNaN(portableExp(Number.NaN)));
  assert.equal(portableExp(-800), 0);
  assert.ok(portableExp(-740) > 0, 'subnormal results survive');
});

test('portableLog stays within 2 ulps of Math.log on (0, 1] and beyond', (t) => {
  let worst = 0;
  const inputs = [...samples(0, 1, 40000), ...samples(1, 1e6, 10000), 2 ** -32, 0.5 / 2 ** 32, 1 - 2 ** -32];
  for (const x of inputs) {
    if (x === 0 || x === 1) continue;
    worst = Math.max(worst, ulpsApart(portableLog(x), Math.log(x)));
  }
  t.diagnostic(`worst log error ${worst} ulps`);
  assert.ok(worst <= 2, `worst ${worst} ulps`);
});

test('portableLog edges: 1 → 0, 0 → −Inf, negatives and NaN → NaN, subnormals are finite', () => {
  assert.equal(portableLog(1), 0);
  assert.equal(portableLog(0), Number.NEGATIVE_INFINITY);
  assert.ok(Number.isNaN(portableLog(-1)));
  assert.ok(Number.isNaN(portableLog(Number.NaN)));
  assert.ok(Math.abs(portableLog(5e-324) - Math.log(5e-324)) < 1e-12);
});

test('the device header carries exactly these polynomial coefficients', () => {
  const header = fs.readFileSync(new URL('../../kernels/cuda/portable_math.cuh', import.meta.url), 'utf8');
  const table = (name: string) => {
    const body = new RegExp(`${name}\\[[^\\]]*\\] = \\{([^}]*)\\}`).exec(header);
    assert.ok(body, `${name} is in the header`);
    return body[1]!.split(',').map((literal) => Number(literal.trim()));
  };
  assert.deepEqual(table('PORTABLE_EXP_COEFFICIENTS'), [...expCoefficients]);
  assert.deepEqual(table('PORTABLE_LOG_COEFFICIENTS'), [...logCoefficients]);
});
