// The streamed load (every tensor checked, storage reserved, the shards read once in file order through two slots)
// against the tensor-by-tensor load on the cpu backend: the same frames from the tiny checkpoint, with per-expert FP8
// weights and with transformers' fused bf16 experts; two slots' bytes of host memory for the stream whatever the
// checkpoint; storage refused mid-reserve, a read failing mid-stream and a shard ending early are refused by name
// and leave nothing reserved.
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { CpuWeightStore } from '../../src/backend/cpu/weight-store.ts';
import type { WeightBlock, WeightStore } from '../../src/backend/types.ts';
import { type FileAccess, systemFileAccess } from '../../src/checkpoint/direct-read.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import { type HostTensor, makeTensor } from '../../src/checkpoint/tensor.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../../src/model/load-model.ts';
import type { StreamedLoadReport } from '../../src/model/streamed-source.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { backboneNames } from '../../src/model/weights.ts';
import { synthesizeCheckpoint } from '../../src/synth/synthesize.ts';
import { samplePrompt, tinyCheckpointDir } from './tiny-checkpoint.ts';

const SLOT_BYTES = 64 * 1024;

/** A cpu backend whose weight store counts what it reserves and releases, and can refuse a block (`refuse` is told
 *  its number, from 1, and its label). */
function countingBackend(refuse: (index: number, label: string) => boolean = () => false) {
  const backend = new CpuBackend();
  const inner = new CpuWeightStore(backend);
  const live = new Set<WeightBlock>();
  let reserved = 0;
  const store: WeightStore<CpuBuffer> = {
    slots: (bytes) => inner.slots(bytes),
    reserve(bytes, label) {
      if (refuse(++reserved, label)) throw new Error(`refused ${label}`);
      const block = inner.reserve(bytes, label);
      live.add(block);
      return block;
    },
    write: (block, offset, source) => inner.write(block, offset, source),
    fence: () => inner.fence(),
    tensor: (block, offset, dtype, shape) => inner.tensor(block, offset, dtype, shape),
    gatherRows(block, offset, rowBytes, ids, label) {
      const gathered = inner.gatherRows(block, offset, rowBytes, ids, label);
      live.add(gathered);
      return gathered;
    },
    release(block) {
      live.delete(block);
      inner.release();
    },
  };
  backend.weightStore = () => store;
  return { backend, inner, live, reserved: () => reserved };
}

async function framesOf(dir: string, options: SpeechModelOptions, backend = new CpuBackend()) {
  const model = await loadSpeechModel(dir, backend, options);
  const prompt = samplePrompt(model.candidates.semanticBegin);
  const sampling = { ...DEFAULT_SAMPLING, seed: 13 };
  return generateFrames(model, prompt, { sampling, maxFrames: 12, prefillChunk: 64 }).frames.map((f) => [...f]);
}

/** A copy of `dir` whose per-expert bf16 weights are stacked into transformers' fused [E, 2I, H] and [E, H, I]. */
async function fusedCopy(dir: string, out: string): Promise<void> {
  await cp(dir, out, { recursive: true });
  for (const file of await readdir(out))
    if (file.endsWith('.safetensors') || file.endsWith('.index.json')) await rm(join(out, file));
  const checkpoint = await SafetensorsCheckpoint.open(dir);
  const tensors: [string, HostTensor][] = [];
  const expert = /^(.*\.mlp\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$/;
  const fused = new Map<
    string,
    { gate: Uint8Array[]; up: Uint8Array[]; down: Uint8Array[]; shapes: (readonly number[])[] }
  >();
  for (const name of checkpoint.names().sort()) {
    const tensor = await checkpoint.read(name);
    const match = expert.exec(name);
    if (match === null) {
      tensors.push([name, tensor]);
      continue;
    }
    const entry = fused.get(match[1]!) ?? { gate: [], up: [], down: [], shapes: [] };
    entry[match[3] as 'gate' | 'up' | 'down'][Number(match[2])] = tensor.data;
    if (match[3] === 'gate') entry.shapes[0] = tensor.shape;
    if (match[3] === 'down') entry.shapes[1] = tensor.shape;
    fused.set(match[1]!, entry);
  }
  await checkpoint.close();
  for (const [base, entry] of fused) {
    const [inner, hidden] = entry.shapes[0]!;
    const experts = entry.gate.length;
    const gateUp = new Uint8Array(experts * 2 * inner! * hidden! * 2);
    const down = new Uint8Array(experts * hidden! * inner! * 2);
    const expertBytes = inner! * hidden! * 2;
    for (let e = 0; e < experts; e++) {
      gateUp.set(entry.gate[e]!, 2 * e * expertBytes);
      gateUp.set(entry.up[e]!, (2 * e + 1) * expertBytes);
      down.set(entry.down[e]!, e * expertBytes);
    }
    tensors.push([`${base}.gate_up_proj`, makeTensor('BF16', [experts, 2 * inner!, hidden!], gateUp)]);
    tensors.push([`${base}.down_proj`, makeTensor('BF16', [experts, hidden!, inner!], down)]);
  }
  await writeSafetensors(join(out, 'model.safetensors'), tensors);
}

const tiny = await tinyCheckpointDir();
const scratch = await mkdtemp(join(tmpdir(), 'drama3-streamed-'));
after(() => rm(scratch, { recursive: true, force: true }));

describe('the streamed load', () => {
  it('gives the frames of the tensor-by-tensor load, through two small slots', async () => {
    const counted = countingBackend();
    let report: StreamedLoadReport | undefined;
    const streamed = await framesOf(
      tiny,
      { stream: { slotBytes: SLOT_BYTES }, onStreamed: (r) => (report = r) },
      counted.backend,
    );
    const plain = await framesOf(tiny, { stream: false });
    assert.ok(plain.length > 0);
    assert.deepEqual(streamed, plain);
    assert.ok(report !== undefined && report.bytes > 20 * SLOT_BYTES, `${report?.bytes} bytes streamed`);
    assert.equal(counted.inner.peakSlotBytes, 2 * SLOT_BYTES, 'host memory of the stream: the two slots');
    assert.equal(counted.inner.slotBytes, 0, 'the slots were freed');
    // An untied head is streamed as its candidate rows alone: every block reserved is held, none gathered apart.
    const checkpoint = await SafetensorsCheckpoint.open(tiny);
    const head = checkpoint.info(backboneNames('model.').lmHead);
    const fileBytes = checkpoint.names().reduce((sum, name) => sum + checkpoint.info(name).byteLength, 0);
    await checkpoint.close();
    const rowBytes = head.byteLength / head.shape[0]!;
    const candidates = 4097; // the 4096 semantic ids and <|im_end|>
    assert.equal(report.bytes, fileBytes - head.byteLength + candidates * rowBytes, 'bytes streamed');
    assert.equal(counted.live.size, counted.reserved(), 'blocks held: every one reserved');
  });

  it('gives the frames of per-expert weights from transformers fused experts', async () => {
    const bf16 = join(scratch, 'bf16');
    await synthesizeCheckpoint(bf16, { preset: 'tiny', seed: 7, experts: 'bf16' });
    const fused = join(scratch, 'fused');
    await fusedCopy(bf16, fused);
    const perExpert = await framesOf(bf16, { stream: false });
    assert.deepEqual(await framesOf(fused, { stream: { slotBytes: SLOT_BYTES } }), perExpert);
    assert.deepEqual(await framesOf(fused, { stream: false }), perExpert);
  });

  it('refuses storage refused mid-reserve by name and frees every block reserved', async () => {
    const counted = countingBackend((index) => index === 40);
    await assert.rejects(
      loadSpeechModel(tiny, counted.backend, { stream: { slotBytes: SLOT_BYTES } }),
      (error: Error) => {
        assert.equal((error as { code?: string }).code, 'WEIGHTS_ALLOCATION_FAILED');
        assert.match(error.message, /storage for tensor \S+ \(\d+ bytes, after \d+ of \d+ tensors\) was refused/);
        return true;
      },
    );
    assert.equal(counted.live.size, 0);
  });

  it("reserves a layer's routed experts as one block, and names that block when it is refused", async () => {
    const whole = countingBackend();
    await loadSpeechModel(tiny, whole.backend, { stream: { slotBytes: SLOT_BYTES } });
    const checkpoint = await SafetensorsCheckpoint.open(tiny);
    const names = checkpoint.names();
    await checkpoint.close();
    const routed = names.filter((name) => /\.mlp\.experts\.\d+\./.test(name));
    const layers = new Set(routed.map((name) => /\.layers\.(\d+)\./.exec(name)![1]));
    assert.ok(routed.length > layers.size, `${routed.length} routed expert tensors in ${layers.size} layers`);
    assert.equal(whole.reserved(), names.length - routed.length + layers.size, 'blocks reserved');
    const counted = countingBackend((_index, label) => label.includes('routed experts of layer 1'));
    await assert.rejects(
      loadSpeechModel(tiny, counted.backend, { stream: { slotBytes: SLOT_BYTES } }),
      (error: Error) => {
        assert.equal((error as { code?: string }).code, 'WEIGHTS_ALLOCATION_FAILED');
        assert.match(
          error.message,
          /^storage for the routed experts of layer 1 \(\d+ tensors, \d+ bytes, after \d+ of \d+ tensors\) was refused/,
        );
        return true;
      },
    );
    assert.equal(counted.live.size, 0);
  });

  for (const [label, code, read] of [
    [
      'a read failing mid-stream',
      'CHECKPOINT_READ_FAILED',
      () => Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' })),
    ],
    ['a shard ending early', 'CHECKPOINT_TRUNCATED', () => Promise.resolve(0)],
  ] as const) {
    it(`refuses ${label} by name, tensor and file, and frees every block reserved`, async () => {
      let reads = 0;
      const access: FileAccess = {
        async open(path, direct) {
          const handle = await systemFileAccess.open(path, direct);
          return {
            read: (target, position) => (++reads === 7 ? read() : handle.read(target, position)),
            close: handle.close,
          };
        },
      };
      const counted = countingBackend();
      await assert.rejects(
        loadSpeechModel(tiny, counted.backend, { stream: { slotBytes: SLOT_BYTES, access } }),
        (error: Error) => {
          assert.equal((error as { code?: string }).code, code);
          assert.match(error.message, /model-\d+-of-\d+\.safetensors.*tensor \S+/);
          return true;
        },
      );
      assert.ok(counted.reserved() > 0);
      assert.equal(counted.live.size, 0);
      assert.equal(counted.inner.slotBytes, 0);
    });
  }
});
