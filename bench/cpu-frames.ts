// Frames per second of the cpu speech model on a `tiny` synthetic checkpoint (or --model DIR), with the per-stage
// split (backbone, tower, sampler) and the prefill rate. Prints one table, then the numbers as JSON (to --json FILE
// when given, else as the last line).
// Usage: tsx bench/cpu-frames.ts [--model DIR] [--frames N] [--precision bf16|fp32|fp64] [--json FILE]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { PrecisionName } from '../src/backend/cpu/precision.ts';
import { generateFrames } from '../src/model/generate.ts';
import { loadSpeechModel } from '../src/model/speech-model.ts';
import { DEFAULT_SAMPLING, type PromptRows } from '../src/model/types.ts';
import { CODES_PER_FRAME } from '../src/shared/frame.ts';
import { synthesizeCheckpoint } from '../src/synth/synthesize.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    frames: { type: 'string', default: '300' },
    precision: { type: 'string', default: 'bf16' },
    json: { type: 'string' },
  },
});
const frameCount = Number(values.frames);
const precision = values.precision as PrecisionName;

const temporary = values.model === undefined ? await mkdtemp(join(tmpdir(), 'drama3-bench-')) : undefined;
const modelDir = values.model ?? temporary!;
if (temporary !== undefined) await synthesizeCheckpoint(temporary, { preset: 'tiny', seed: 1, experts: 'fp8' });
const model = await loadSpeechModel(modelDir, { precision });
if (model.synthetic) console.log('note: synthetic checkpoint (random weights): the frames are noise, not speech');

// A 100-row prompt: 60 text rows then 40 reference code rows.
const promptRows = 100;
const tokens = new Int32Array(promptRows);
const codes = new Int32Array(promptRows * CODES_PER_FRAME).fill(-1);
for (let row = 0; row < promptRows; row++) {
  if (row < 60) {
    tokens[row] = 1000 + row;
    continue;
  }
  for (let k = 0; k < CODES_PER_FRAME; k++) codes[row * CODES_PER_FRAME + k] = (row * 97 + k) % 1024;
  tokens[row] = model.candidates.semanticBegin + codes[row * CODES_PER_FRAME]!;
}
const prompt: PromptRows = { tokens, codes, referenceRows: promptRows };

// Warm up the JIT, then measure from zeroed stage times.
generateFrames(model, prompt, { sampling: DEFAULT_SAMPLING, maxFrames: 20, prefillChunk: 256 });
Object.assign(model.stageTimes, { prefill: 0, backbone: 0, tower: 0, sampler: 0 });
const result = generateFrames(model, prompt, {
  sampling: { ...DEFAULT_SAMPLING, seed: 1 },
  maxFrames: frameCount,
  prefillChunk: 256,
});
const frames = result.frames.length;
const times = model.stageTimes;
const perFrame = (ms: number) => (ms / frames).toFixed(3);
const report = {
  machine: `${cpus()[0]?.model ?? 'unknown cpu'} (one thread)`,
  precision,
  promptRows,
  frames,
  finishReason: result.finishReason,
  framesPerSecond: (frames * 1000) / result.framesMilliseconds,
  prefillRowsPerSecond: (promptRows * 1000) / result.prefillMilliseconds,
  millisecondsPerFrame: {
    backbone: times.backbone / frames,
    tower: times.tower / frames,
    sampler: times.sampler / frames,
    total: result.framesMilliseconds / frames,
  },
};
console.log(
  `cpu frames, ${report.machine}, ${precision}, prompt ${promptRows} rows, ${frames} frames (${result.finishReason})`,
);
console.log('stage        ms/frame');
console.log(`backbone     ${perFrame(times.backbone)}`);
console.log(`tower        ${perFrame(times.tower)}`);
console.log(`sampler      ${perFrame(times.sampler)}`);
console.log(`total        ${perFrame(result.framesMilliseconds)}`);
console.log(`frames/s     ${report.framesPerSecond.toFixed(1)}`);
console.log(`prefill      ${report.prefillRowsPerSecond.toFixed(0)} rows/s`);
if (values.json !== undefined) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
else console.log(JSON.stringify(report));
if (temporary !== undefined) await rm(temporary, { recursive: true, force: true });
