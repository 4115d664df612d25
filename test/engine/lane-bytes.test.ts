// A lane's device bytes (src/engine/lane-bytes.ts) counted by hand for the tiny and the real geometry, and checked
// against what the model's own allocation code asks a backend for: LaneSlabs (the backbone's and tower's
// allocateSlabs) on a backend that only records, and a whole plan of the tiny checkpoint. Runs without a GPU.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import { elementBytes } from '../../src/backend/cuda/tensors.ts';
import type { Backend, DType } from '../../src/backend/types.ts';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { expertLayerBytes, laneBytes, laneStateBytesFor, planBytes } from '../../src/engine/lane-bytes.ts';
import { Backbone, type BackboneLayer } from '../../src/model/backbone.ts';
import { type Drama3Config, FP8_BLOCK_QUANTIZATION, FULL_PRESET } from '../../src/model/config.ts';
import { LaneSlabs } from '../../src/model/lane-slabs.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import { Tower } from '../../src/model/tower.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { tinyConfig } from '../model/tiny-config.ts';

const FULL: Drama3Config = tinyConfig({
  ...FULL_PRESET,
  codec: REAL_CODEC_CONFIG,
  quantization: FP8_BLOCK_QUANTIZATION,
});

interface Recorded {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** Device bytes of recorded allocations as the cuda backend sizes them (elements × element bytes, at least 1). */
function deviceBytes(recorded: readonly Recorded[]): number {
  const bytes = (item: Recorded) => item.shape.reduce((product, size) => product * size, elementBytes(item.dtype));
  return recorded.reduce((sum, item) => sum + Math.max(bytes(item), 1), 0);
}

/** A backend that records what is allocated and stores nothing: the slab code runs at any size. */
function recordingBackend(recorded: Recorded[]): Backend<undefined> {
  const backend = {
    allocate: (dtype: DType, shape: readonly number[]) => {
      recorded.push({ dtype, shape: [...shape] });
      return { dtype, shape: [...shape], data: undefined };
    },
    fillSlot: () => {},
  };
  return backend as unknown as Backend<undefined>;
}

/** What LaneSlabs allocates for `config` at `slots` × `rows`, through the backbone's and tower's own code. */
function slabAllocations(config: Drama3Config, slots: number, rows: number): Recorded[] {
  const recorded: Recorded[] = [];
  const backend = recordingBackend(recorded);
  const none = { dtype: 'bf16', shape: [0], data: undefined } as const;
  const layers = config.text.layerTypes.map((type) => ({ type }) as BackboneLayer<undefined>);
  const backbone = new Backbone(backend, config.text, layers, none, none, none);
  const towerLayers = Array.from({ length: config.tower.layers }, () => ({}) as never);
  const tower = new Tower(backend, config.tower, config.audio, towerLayers, none);
  new LaneSlabs(backend, backbone, tower, slots, rows, 1 + config.audio.codebooks);
  return recorded;
}

test("a lane's device bytes at the tiny geometry, by hand", () => {
  const config = tinyConfig();
  // 8 layers in the 3:1 pattern: 2 full attention (K and V, 2 heads × 16, bf16), 13 tower layers alike.
  const perRow = 2 * (2 * 2 * 16 * 2) + 13 * (2 * 2 * 16 * 2);
  // 6 DeltaNet layers: conv 3 × (2·2·16 + 4·16) bf16 and recurrent 4 × 16 × 16 f32; RAS window 16 and record 11 i32.
  const fixed = 6 * (3 * 128 * 2 + 4 * 16 * 16 * 4) + (16 + 11) * 4;
  assert.deepEqual(laneBytes(config), {
    fixedPerLane: fixed,
    perPromptRow: perRow,
    perFrame: perRow,
    codecPerStream: 0,
  });
  assert.equal(perRow, 1920);
  assert.equal(fixed, 29292);
});

test("a lane's device bytes at the real geometry, by hand: 47104 a row, 64.4 MB fixed, 8.9 MB of codec", () => {
  // 10 full-attention layers and 13 tower layers, each K and V of 2 heads × 256 in bf16.
  const perRow = 10 * (2 * 2 * 256 * 2) + 13 * (2 * 2 * 256 * 2);
  // 30 DeltaNet layers: conv 3 × 8192 bf16, recurrent 32 heads × 128 × 128 f32; then the RAS window and record.
  const fixed = 30 * (3 * 8192 * 2 + 32 * 128 * 128 * 4) + (16 + 11) * 4;
  const bytes = laneBytes(FULL, FULL.codec);
  assert.deepEqual(bytes, { fixedPerLane: fixed, perPromptRow: perRow, perFrame: perRow, codecPerStream: 8925440 });
  assert.equal(perRow, 47104);
  // A lane planned for the whole context holds 12.41 GB.
  assert.equal(laneStateBytesFor(bytes, 262144), 262144 * 47104 + 64389228);
  // One layer's FP8 experts: 256 × 3 matrices of 512 × 2048 bytes, scales 4 × 16 per gate and up, 16 × 4 per down.
  assert.equal(expertLayerBytes(FULL), 256 * 3 * 512 * 2048 + 256 * 3 * 64 * 4);
});

for (const [name, config] of [
  ['tiny', tinyConfig()],
  ['real', FULL],
] as const) {
  test(`the ${name} geometry's slabs, as LaneSlabs allocates them, are the counted bytes`, () => {
    for (const [slots, rows] of [
      [1, 2],
      [5, 262144],
      [9, 1000],
    ] as const) {
      const counted = slots * laneStateBytesFor(laneBytes(config), rows);
      assert.equal(deviceBytes(slabAllocations(config, slots, rows)), counted, `${slots} slots × ${rows} rows`);
    }
  });
}

test('a plan of the tiny checkpoint allocates the counted slabs, tables and records besides its activations', async () => {
  const recorded: Recorded[] = [];
  const cpu = new CpuBackend();
  // The model's own backend, recording each allocation on the way.
  const backend = new Proxy(cpu, {
    get(target, key) {
      if (key === 'allocate') {
        return (dtype: DType, shape: readonly number[]) => {
          recorded.push({ dtype, shape: [...shape] });
          return target.allocate(dtype, shape);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const model = await loadSpeechModel(await tinyCheckpointDir(), backend, { prefillChunk: 24 });
  for (const [index, capacity] of [
    { lanes: 3, rowsPerLane: 100 },
    { lanes: 1, rowsPerLane: 10 },
  ].entries()) {
    recorded.length = 0;
    model.plan(capacity);
    // Activations are one-dimensional pool buffers that plan sizes by running; every other allocation is counted.
    const counted = recorded.filter((item) => item.shape.length > 1);
    const expected = planBytes(model.config, capacity, 24);
    assert.equal(deviceBytes(counted), expected.total, `${capacity.lanes} lanes of ${capacity.rowsPerLane} rows`);
    assert.equal(expected.rowsPerSlot, Math.max(capacity.rowsPerLane, 25));
    if (index === 0)
      assert.ok(
        recorded.some((item) => item.shape.length === 1),
        'activation buffers were left out',
      );
  }
});
