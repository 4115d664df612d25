// The staging ring over the host imitation of the driver (support/fake-cuda.ts, whose copies through pinned memory
// run late, as the real ones may): a queued write returns without waiting for the stream and lands in order; a read
// started early gives the bytes as they stood when it was queued, once waited for; a region is reused only after
// its copy's event; a read not yet waited for is never overwritten.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LARGEST_STAGED_BYTES, STAGING_RING_BYTES, StagingRing } from '../../src/backend/cuda/staging-ring.ts';
import { FakeDriver, fakeContext } from './support/fake-cuda.ts';

function setUp() {
  const driver = new FakeDriver();
  const cuda = fakeContext(driver);
  const ring = new StagingRing(cuda);
  const target = cuda.memory.allocate('device', 16 * 1024, 'target').pointer;
  const device = (bytes: number) => driver.bytes(target, bytes);
  return { driver, cuda, ring, target, device };
}

test('a queued write returns without waiting; its values are taken when queued and land in stream order', () => {
  const { driver, ring, target, device } = setUp();
  const values = Uint8Array.from([1, 2, 3, 4]);
  ring.write(target, values);
  values.fill(9);
  ring.write(target + 4n, Uint8Array.from([5, 6]));
  assert.ok(!driver.events.includes('synchronize'), 'nothing waited for the stream');
  assert.deepEqual([...device(6)], [0, 0, 0, 0, 0, 0], 'the copies are still queued');
  driver.synchronizeStream();
  assert.deepEqual([...device(6)], [1, 2, 3, 4, 5, 6]);
});

test('a read queued before a write gives the bytes as they stood when it was queued; it is waited for once', () => {
  const { driver, ring, target } = setUp();
  ring.write(target, Uint8Array.from([7, 7, 7, 7]));
  const before = ring.read(target, 4);
  ring.write(target, Uint8Array.from([8, 8, 8, 8]));
  const after = ring.read(target, 4);
  assert.equal(driver.queuedCopies, 4, 'all four copies queued');
  assert.deepEqual([...before.wait()], [7, 7, 7, 7]);
  assert.deepEqual([...after.wait()], [8, 8, 8, 8]);
  assert.throws(() => before.wait(), { code: 'STAGED_READ_TAKEN' });
});

test('the ring wraps after waiting for the copies of the regions it reuses, never over a read not waited for', () => {
  const { driver, ring, target, device } = setUp();
  const piece = 8 * 1024;
  const writes = (2 * STAGING_RING_BYTES) / piece;
  for (let index = 0; index < writes; index++) ring.write(target, new Uint8Array(piece).fill(index));
  const waited = driver.events.filter((event) => event === 'synchronize event').length;
  assert.ok(waited > 0, 'reusing a region waited for its copy');
  driver.synchronizeStream();
  assert.equal(device(1)[0], (writes - 1) & 0xff, 'the last write landed last');
  const held = Array.from({ length: STAGING_RING_BYTES / 256 }, () => ring.read(target, 4));
  assert.throws(() => ring.read(target, 4), { code: 'STAGING_RING_FULL' });
  held[0]!.wait();
  assert.doesNotThrow(() => ring.read(target, 4), 'the region waited for is free again');
  assert.throws(() => ring.write(target, new Uint8Array(LARGEST_STAGED_BYTES + 1)), {
    code: 'STAGED_COPY_TOO_LARGE',
  });
});

test('release waits for every queued copy and gives the pinned memory back', () => {
  const { driver, cuda, ring, target, device } = setUp();
  ring.write(target, Uint8Array.from([3, 1, 4]));
  assert.ok(cuda.memory.usage('pinned-host').usedBytes >= STAGING_RING_BYTES);
  ring.release();
  assert.deepEqual([...device(3)], [3, 1, 4]);
  assert.equal(driver.queuedCopies, 0);
  assert.equal(cuda.memory.usage('pinned-host').usedBytes, 0);
});
