// The two-slot checkpoint stream: every tensor's exact bytes, in file order, through slots smaller than some tensors
// (pieces) and with tensors straddling windows; O_DIRECT refused by EINVAL (at open and at read) falls back once per
// file; O_DIRECT reads, where this file system takes them, are aligned; a shard cut short after its header was read,
// and a read failing mid-way, are refused by name. The consumer copies a slot's bytes only when the stream waits on
// it (the latest an async device copy may complete), so a slot refilled too early gives wrong bytes.
import assert from 'node:assert/strict';
import { mkdtemp, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { alignedHostBuffers } from '../../src/backend/aligned-host.ts';
import { addressOf } from '../../src/backend/cuda/library.ts';
import { DIRECT_ALIGNMENT, type FileAccess, systemFileAccess } from '../../src/checkpoint/direct-read.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeShardedSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import {
  type SlotConsumer,
  type StreamedTensor,
  type StreamOptions,
  streamTensors,
} from '../../src/checkpoint/slot-stream.ts';
import { type HostTensor, makeTensor } from '../../src/checkpoint/tensor.ts';

const SLOT_BYTES = 2 * DIRECT_ALIGNMENT;
/** Sizes around the slot length: smaller, several slots long, one page, exactly one slot, empty. */
const SIZES: Record<string, number> = {
  a: 5,
  b: 2 * SLOT_BYTES + 100,
  c: DIRECT_ALIGNMENT,
  d: 0,
  e: SLOT_BYTES,
  f: 3,
  g: 3 * SLOT_BYTES + 1,
  h: 777,
};

let folder: string;
let checkpoint: SafetensorsCheckpoint;
let tensors: StreamedTensor[];
const expected = new Map<string, Uint8Array>();

function bytesOf(name: string, length: number): HostTensor {
  const data = new Uint8Array(length);
  for (let i = 0; i < length; i++) data[i] = (i * 131 + name.charCodeAt(0) * 17 + (i >> 8)) & 0xff;
  return makeTensor('U8', [length], data);
}

async function writeCheckpoint(dir: string): Promise<SafetensorsCheckpoint> {
  const list = Object.entries(SIZES).map(([name, size]) => [name, bytesOf(name, size)] as [string, HostTensor]);
  await writeShardedSafetensors(dir, list, { maxShardBytes: 3 * SLOT_BYTES });
  return SafetensorsCheckpoint.open(dir);
}

before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-slot-stream-'));
  checkpoint = await writeCheckpoint(folder);
  // Handed over out of order: the stream sorts by (file, offset).
  tensors = checkpoint
    .names()
    .reverse()
    .map((name) => ({ name, ...checkpoint.info(name) }));
  for (const name of checkpoint.names()) expected.set(name, (await checkpoint.read(name)).data);
});

after(async () => {
  await checkpoint.close();
  await rm(folder, { recursive: true, force: true });
});

/** A consumer whose copies happen when the stream waits on them, checking that every piece lies in a slot. */
function lateCopies(slots: readonly Uint8Array[]) {
  const received = new Map<string, Uint8Array>();
  const positions: [string, number][] = [];
  let pending = 0;
  const consume: SlotConsumer = (pieces) => {
    for (const piece of pieces) {
      const inSlot = slots.some(
        (slot) =>
          slot.buffer === piece.bytes.buffer &&
          piece.bytes.byteOffset >= slot.byteOffset &&
          piece.bytes.byteOffset + piece.bytes.byteLength <= slot.byteOffset + slot.byteLength,
      );
      assert.ok(inSlot, `a piece of ${piece.tensor.name} lies outside the two slots`);
      positions.push([piece.tensor.file, piece.tensor.fileOffset + piece.tensorOffset]);
    }
    pending += 1;
    let copied = false;
    return async () => {
      await new Promise((resolve) => setImmediate(resolve));
      if (copied) return;
      copied = true;
      pending -= 1;
      for (const piece of pieces) {
        const target = received.get(piece.tensor.name) ?? new Uint8Array(piece.tensor.byteLength);
        target.set(piece.bytes, piece.tensorOffset);
        received.set(piece.tensor.name, target);
      }
    };
  };
  return { consume, received, positions, pending: () => pending };
}

async function streamAll(options: StreamOptions) {
  const held = alignedHostBuffers(2, SLOT_BYTES);
  const copies = lateCopies(held.buffers);
  try {
    const report = await streamTensors(tensors, held.buffers, copies.consume, options);
    return { report, ...copies };
  } finally {
    held.free();
  }
}

function assertExactBytes(received: Map<string, Uint8Array>): void {
  for (const [name, bytes] of expected) {
    if (bytes.byteLength === 0) continue;
    assert.deepEqual(received.get(name), bytes, `tensor ${name}`);
  }
}

function assertFileOrder(positions: [string, number][]): void {
  for (let i = 1; i < positions.length; i++) {
    const [file, at] = positions[i]!;
    const [previousFile, previousAt] = positions[i - 1]!;
    assert.ok(file > previousFile || (file === previousFile && at > previousAt), `piece ${i} is out of file order`);
  }
}

/** File access whose O_DIRECT opens answer EINVAL. */
const directRefused: FileAccess = {
  open: (path, direct) =>
    direct
      ? Promise.reject(Object.assign(new Error('EINVAL'), { code: 'EINVAL' }))
      : systemFileAccess.open(path, false),
};

/** File access whose O_DIRECT opens succeed but whose O_DIRECT reads answer EINVAL. */
const directReadRefused: FileAccess = {
  async open(path, direct) {
    const handle = await systemFileAccess.open(path, false);
    if (!direct) return handle;
    return { read: () => Promise.reject(Object.assign(new Error('EINVAL'), { code: 'EINVAL' })), close: handle.close };
  },
};

describe('the two-slot checkpoint stream', () => {
  it('gives every tensor its exact bytes, in file order, through two slots smaller than some tensors', async () => {
    const { report, received, positions, pending } = await streamAll({ direct: false });
    assertExactBytes(received);
    assertFileOrder(positions);
    assert.equal(pending(), 0, 'every slot was waited on before the stream returned');
    assert.equal(
      report.bytes,
      [...expected.values()].reduce((sum, bytes) => sum + bytes.byteLength, 0),
    );
    assert.ok(report.windows > Object.keys(SIZES).length / 2, `${report.windows} windows`);
    assert.ok(new Set(tensors.map((tensor) => tensor.file)).size > 1, 'the checkpoint has several shards');
    assert.deepEqual(report.directFiles, []);
  });

  for (const direct of [false, true]) {
    it(`reads a window as several reads at once, each tensor still exact (O_DIRECT ${direct})`, async () => {
      let inFlight = 0;
      let most = 0;
      const counting: FileAccess = {
        async open(path, wantDirect) {
          const handle = await systemFileAccess.open(path, wantDirect);
          return {
            async read(target, position) {
              most = Math.max(most, ++inFlight);
              try {
                return await handle.read(target, position);
              } finally {
                inFlight -= 1;
              }
            },
            close: handle.close,
          };
        },
      };
      const { received, positions } = await streamAll({ direct, access: counting, readPieceBytes: DIRECT_ALIGNMENT });
      assertExactBytes(received);
      assertFileOrder(positions);
      assert.ok(most > 1, `at most ${most} reads were in flight together`);
    });
  }

  it('falls back to the page cache once per file when O_DIRECT opens answer EINVAL', async () => {
    const notices: string[] = [];
    const { report, received } = await streamAll({ access: directRefused, notice: (m) => notices.push(m) });
    assertExactBytes(received);
    const files = [...new Set(tensors.map((tensor) => tensor.file))];
    assert.equal(notices.length, files.length, notices.join('\n'));
    assert.ok(notices.every((notice) => /O_DIRECT refused \(EINVAL\)/.test(notice)));
    assert.deepEqual(report.bufferedFiles.toSorted(), files.toSorted());
  });

  it('falls back once per file when O_DIRECT reads answer EINVAL', async () => {
    const notices: string[] = [];
    const { report, received } = await streamAll({ access: directReadRefused, notice: (m) => notices.push(m) });
    assertExactBytes(received);
    assert.equal(notices.length, new Set(tensors.map((tensor) => tensor.file)).size, notices.join('\n'));
    assert.equal(report.directFiles.length, 0);
  });

  it('reads with O_DIRECT where this file system takes it, at aligned offsets, lengths and addresses', async (t) => {
    let directReads = 0;
    const aligned: FileAccess = {
      async open(path, direct) {
        const handle = await systemFileAccess.open(path, direct);
        if (!direct) return handle;
        return {
          read(target, position) {
            directReads += 1;
            assert.equal(position % DIRECT_ALIGNMENT, 0, `offset ${position}`);
            assert.equal(target.byteLength % DIRECT_ALIGNMENT, 0, `length ${target.byteLength}`);
            assert.equal(addressOf(target) % BigInt(DIRECT_ALIGNMENT), 0n, 'buffer address');
            return handle.read(target, position);
          },
          close: handle.close,
        };
      },
    };
    const notices: string[] = [];
    const { report, received } = await streamAll({ access: aligned, notice: (m) => notices.push(m) });
    assertExactBytes(received);
    if (report.directFiles.length === 0) {
      t.diagnostic(`this file system refuses O_DIRECT, so only the fallback ran: ${notices.join('; ')}`);
      return;
    }
    assert.ok(directReads > 0);
    assert.deepEqual(notices, []);
    t.diagnostic(`${directReads} O_DIRECT reads in ${tmpdir()}`);
  });

  for (const direct of [true, false]) {
    it(`refuses a shard cut short after its header was read, naming the tensor and file (O_DIRECT ${direct})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'drama3-slot-cut-'));
      const opened = await writeCheckpoint(dir);
      try {
        const list = opened.names().map((name) => ({ name, ...opened.info(name) }));
        const g = list.find((tensor) => tensor.name === 'g')!;
        await truncate(g.file, g.fileOffset + SLOT_BYTES + 10);
        const held = alignedHostBuffers(2, SLOT_BYTES);
        const copies = lateCopies(held.buffers);
        await assert.rejects(streamTensors(list, held.buffers, copies.consume, { direct }), (error: Error) => {
          assert.equal((error as { code?: string }).code, 'CHECKPOINT_TRUNCATED');
          assert.match(error.message, new RegExp(`${g.file}.*inside tensor g`));
          return true;
        });
        assert.equal(copies.pending(), 0, 'the slots were drained before the error came back');
        held.free();
      } finally {
        await opened.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it('refuses a read failing mid-way by name, after draining the slots', async () => {
    let reads = 0;
    const failing: FileAccess = {
      async open(path) {
        const handle = await systemFileAccess.open(path, false);
        return {
          read: (target, position) =>
            ++reads === 4
              ? Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' }))
              : handle.read(target, position),
          close: handle.close,
        };
      },
    };
    const held = alignedHostBuffers(2, SLOT_BYTES);
    const copies = lateCopies(held.buffers);
    await assert.rejects(
      streamTensors(tensors, held.buffers, copies.consume, { access: failing, direct: false }),
      (error: Error) => {
        assert.equal((error as { code?: string }).code, 'CHECKPOINT_READ_FAILED');
        assert.match(error.message, /\.safetensors: reading tensor \w+ at byte \d+ failed \(EIO\)/);
        return true;
      },
    );
    assert.equal(copies.pending(), 0);
    held.free();
  });

  it('takes exactly two page-aligned slots of one length', async () => {
    const held = alignedHostBuffers(3, SLOT_BYTES);
    const consume = lateCopies(held.buffers).consume;
    await assert.rejects(streamTensors(tensors, held.buffers, consume), /STREAM_SLOTS_INVALID|two slots/);
    await assert.rejects(streamTensors(tensors, [new Uint8Array(5000), new Uint8Array(5000)], consume), /multiple/);
    held.free();
  });
});
