// Reads the codec oracle's fixtures (tools/oracle/codec.py): manifest.json plus little-endian .bin arrays, and compares
// a pass's recorded stage outputs with them.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StageObserver } from '../../src/codec/blocks.ts';
import { parseCodecConfig } from '../../src/codec/config.ts';
import type { Frame } from '../../src/model/types.ts';

/** test/fixtures/codec beside this file, or under the working directory when a bundle runs it (the GPU machine). */
function fixtureDirectory(): string {
  const beside = join(import.meta.dirname, '..', 'fixtures', 'codec');
  return existsSync(beside) ? beside : join(process.cwd(), 'test', 'fixtures', 'codec');
}

export const FIXTURE_DIR = fixtureDirectory();

interface ArrayEntry {
  readonly name: string;
  readonly file: string;
  readonly dtype: 'float32' | 'float64' | 'int32';
  readonly shape: number[];
  readonly full_shape: number[];
}

const manifest = JSON.parse(readFileSync(join(FIXTURE_DIR, 'manifest.json'), 'utf8')) as {
  config: unknown;
  arrays: ArrayEntry[];
};

export const fixtureConfig = parseCodecConfig(manifest.config, 'test/fixtures/codec/manifest.json');

function fixtureEntry(name: string): ArrayEntry {
  const entry = manifest.arrays.find((candidate) => candidate.name === name);
  if (entry === undefined) throw new Error(`fixture array ${name} is not in the manifest`);
  return entry;
}

function fixtureNames(prefix: string): string[] {
  return manifest.arrays.map((entry) => entry.name).filter((name) => name.startsWith(prefix));
}

function bytes(name: string): ArrayBuffer {
  const data = readFileSync(join(FIXTURE_DIR, fixtureEntry(name).file));
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

export function fixtureFloats(name: string): Float32Array {
  return new Float32Array(bytes(name));
}

export function fixtureDoubles(name: string): Float64Array {
  return new Float64Array(bytes(name));
}

/** Codes [K, F] → F frames of K codes. */
export function fixtureFrames(name: string): Frame[] {
  const [codebooks, frames] = fixtureEntry(name).shape as [number, number];
  const codes = new Int32Array(bytes(name));
  return Array.from({ length: frames }, (_, frame) => {
    const out = new Int32Array(codebooks);
    for (let codebook = 0; codebook < codebooks; codebook++) out[codebook] = codes[codebook * frames + frame]!;
    return out;
  });
}

/** max |a − b| / max |b| over the first `count` values of a [channels, *] stage kept as [channels, keptRows]. */
export function stageRelativeError(
  actual: Float32Array,
  actualRows: number,
  expected: Float32Array | Float64Array,
  channels: number,
  keptRows: number,
): { relative: number; worst: string } {
  let maxDifference = 0;
  let maxReference = 0;
  let worst = '';
  for (let channel = 0; channel < channels; channel++) {
    for (let row = 0; row < keptRows; row++) {
      const reference = expected[channel * keptRows + row]!;
      const difference = Math.abs(actual[channel * actualRows + row]! - reference);
      maxReference = Math.max(maxReference, Math.abs(reference));
      if (!(difference <= maxDifference)) {
        maxDifference = difference;
        worst = `channel ${channel} row ${row}: ${actual[channel * actualRows + row]} vs ${reference}`;
      }
    }
  }
  return { relative: maxDifference / maxReference, worst };
}

interface RecordedStage {
  readonly values: Float32Array;
  readonly rows: number;
  readonly channels: number;
}

/** An observer for a codec pass that keeps a copy of every stage output (the pass reuses its scratch). */
export function stageRecorder(): { stages: Map<string, RecordedStage>; observer: StageObserver } {
  const stages = new Map<string, RecordedStage>();
  const observer: StageObserver = (name, values, channels, rows) =>
    stages.set(name, { values: values.slice(), rows, channels });
  return { stages, observer };
}

/**
 * Asserts that every fixture array named `prefix…` (but those in `skip`) was recorded with the fixture's full shape and
 * within 1e-5 relative error of PyTorch fp32 over the rows the fixture keeps. Returns the names compared.
 */
export function assertStagesMatch(
  stages: ReadonlyMap<string, RecordedStage>,
  prefix: string,
  skip: readonly string[],
): string[] {
  const names = fixtureNames(prefix).filter((name) => !skip.includes(name));
  for (const name of names) {
    const stage = stages.get(name);
    assert.ok(stage, `stage ${name} was not observed`);
    const entry = fixtureEntry(name);
    assert.deepEqual([stage.channels, stage.rows], entry.full_shape, name);
    const { relative, worst } = stageRelativeError(
      stage.values,
      stage.rows,
      fixtureFloats(name),
      stage.channels,
      entry.shape[1]!,
    );
    assert.ok(relative <= 1e-5, `${name}: relative error ${relative.toExponential(2)} at ${worst}`);
  }
  return names;
}
