// The quantiser's e4m3 conversion (kernels/cuda/quantize_fp8.cuh): on a GPU with the conversion instruction,
// e4m3_bits must give e4m3_bits_portable's bits (the definition the cpu's float32ToE4m3Bits mirrors) for every one of
// the 2^32 float bit patterns, NaNs, infinities, subnormals and both zeros included. The control converts the
// instruction's other operand (a swapped pair) and must be seen. Skips, saying why, without CUDA.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { KernelArguments } from '../../src/backend/cuda/kernelArguments.ts';
import { launch } from '../../src/backend/cuda/ops/launch.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const CHECK = { family: 'quantize_fp8', name: 'e4m3_conversion_check' };
const PATTERNS = 2 ** 32;

let cuda: CudaContext;
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => cuda?.close());

/** The patterns where the two conversions differ, and the lowest of them, over every float. */
function mismatches(lowOperand: boolean): { count: bigint; lowest: number } {
  const counter = cuda.upload(new BigUint64Array(1), 'e4m3 check: mismatches');
  const lowest = cuda.upload(Uint32Array.of(0xffffffff), 'e4m3 check: lowest pattern');
  try {
    const args = new KernelArguments(5)
      .pointer(counter.pointer)
      .pointer(lowest.pointer)
      .uint32(0)
      .int64(PATTERNS)
      .int32(lowOperand ? 1 : 0);
    launch(cuda, CHECK, { grid: [cuda.properties.multiprocessors * 8, 1, 1], block: [256, 1, 1] }, args, {});
    const count = cuda.download(counter.pointer, new BigUint64Array(1))[0]!;
    return { count, lowest: cuda.download(lowest.pointer, new Uint32Array(1))[0]! };
  } finally {
    counter.free();
    lowest.free();
  }
}

test('e4m3_bits gives the portable definition’s bits on every float', { skip }, () => {
  const { count, lowest } = mismatches(false);
  assert.equal(count, 0n, `${count} patterns differ, the lowest 0x${lowest.toString(16)}`);
});

test('control: a conversion of the pair’s other operand is seen', { skip }, () => {
  const { count, lowest } = mismatches(true);
  console.log(`CAUGHT ${count} patterns differ, the lowest 0x${lowest.toString(16).padStart(8, '0')}`);
  assert.ok(count > 0n, 'the swapped operand passed');
  // Up to 2^-10 (0x3a800000, a tie to even) every float rounds to e4m3 0, as the other operand does; the next does not.
  assert.equal(lowest, 0x3a800001);
});
