// The allocator's limit, with a stand-in backend (runs everywhere; driver.test.ts repeats the key checks on a GPU):
// allocations in flight together never pass the limit, and a refused or failed one leaves usage and peak unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AllocationBackend, type MemoryKind, MemoryPool } from '../../src/backend/cuda/memory.ts';
import { isDramaError } from '../../src/errors.ts';
import { Random } from './support/random.ts';

/** A backend that answers after a random delay and records the most bytes it ever held or had in flight. */
function slowBackend(random: Random) {
  let inFlightOrHeld = 0;
  let most = 0;
  let next = 1n;
  const sizes = new Map<bigint, number>();
  const backend: AllocationBackend = {
    async allocate(_kind: MemoryKind, bytes: number) {
      inFlightOrHeld += bytes;
      most = Math.max(most, inFlightOrHeld);
      await sleep(random.integer(5));
      const pointer = next++;
      sizes.set(pointer, bytes);
      return pointer;
    },
    release(_kind: MemoryKind, pointer: bigint) {
      inFlightOrHeld -= sizes.get(pointer)!;
      sizes.delete(pointer);
    },
  };
  return { backend, most: () => most };
}

test('concurrent allocations never reserve past the limit', async () => {
  const random = new Random(7);
  const { backend, most } = slowBackend(random);
  const pool = new MemoryPool(backend, { deviceBytes: 10_000, pinnedHostBytes: 0 });
  const sizes = Array.from({ length: 60 }, () => 100 + random.integer(900));
  const settled = await Promise.allSettled(sizes.map((bytes) => pool.allocateAsync('device', bytes, 'test')));
  const granted = settled.filter((result) => result.status === 'fulfilled');
  const refused = settled.filter((result) => result.status === 'rejected');
  assert.ok(refused.length > 0, 'the requests were sized to overflow the limit');
  for (const result of refused) assert.equal((result.reason as { code: string }).code, 'ALLOCATION_LIMIT_EXCEEDED');
  assert.ok(most() <= 10_000, `the backend held ${most()} bytes at once`);
  const grantedBytes = granted.reduce((sum, result) => sum + result.value.bytes, 0);
  assert.deepEqual(pool.usage('device'), {
    usedBytes: grantedBytes,
    pendingBytes: 0,
    peakBytes: grantedBytes,
    limitBytes: 10_000,
  });
});

test('a refused allocation leaves usage and peak unchanged', () => {
  let next = 1n;
  const pool = new MemoryPool({ allocate: () => next++, release: () => {} }, { deviceBytes: 1000, pinnedHostBytes: 0 });
  const first = pool.allocate('device', 600, 'first');
  first.free();
  const second = pool.allocate('device', 400, 'second');
  const before = pool.usage('device');
  assert.deepEqual(before, { usedBytes: 400, pendingBytes: 0, peakBytes: 600, limitBytes: 1000 });
  assert.throws(
    () => pool.allocate('device', 601, 'too much'),
    (error) => isDramaError(error) && error.code === 'ALLOCATION_LIMIT_EXCEEDED' && /601 bytes/.test(error.message),
  );
  assert.deepEqual(pool.usage('device'), before);
  second.free();
  assert.equal(pool.usage('device').usedBytes, 0);
});

test('a failed driver call refunds its reservation', async () => {
  const failing: AllocationBackend = {
    allocate: () => {
      throw new Error('CUDA_ERROR_OUT_OF_MEMORY');
    },
    release: () => {},
  };
  const pool = new MemoryPool(failing, { deviceBytes: 1000, pinnedHostBytes: 1000 });
  assert.throws(() => pool.allocate('device', 500, 'sync'), /OUT_OF_MEMORY/);
  await assert.rejects(pool.allocateAsync('pinned-host', 500, 'async'), /OUT_OF_MEMORY/);
  for (const kind of ['device', 'pinned-host'] as const) {
    assert.deepEqual(pool.usage(kind), { usedBytes: 0, pendingBytes: 0, peakBytes: 0, limitBytes: 1000 });
  }
});

test('pinned host memory has its own limit and the sizes are checked', () => {
  let next = 1n;
  const pool = new MemoryPool({ allocate: () => next++, release: () => {} }, { deviceBytes: 100, pinnedHostBytes: 50 });
  pool.allocate('pinned-host', 50, 'staging');
  assert.throws(() => pool.allocate('pinned-host', 1, 'more'), /ALLOCATION_LIMIT|over the limit/);
  assert.equal(pool.usage('device').usedBytes, 0);
  assert.throws(
    () => pool.allocate('device', 0, 'empty'),
    (error) => isDramaError(error) && error.code === 'ALLOCATION_SIZE_INVALID',
  );
  assert.throws(
    () => pool.allocate('device', 1.5, 'fraction'),
    (error) => isDramaError(error) && error.code === 'ALLOCATION_SIZE_INVALID',
  );
});
