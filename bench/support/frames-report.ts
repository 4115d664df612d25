// The frame bench's tables and JSON: frames/s per batch beside the roofline of the bytes a step reads (at the copy
// bandwidth measured in the same run) and the PyTorch baseline, the bytes by part, prefill, device memory, and the
// kernels by share of a profiled step.
import type { DeviceProperties } from '../../src/backend/cuda/context.ts';
import { laneSlabBytes, type StepBytes, stepBytes, weightMapBytes } from './frame-bytes.ts';
import type { FramesMeasurements } from './frames-run.ts';
import type { LaunchProfile } from './launch-profile.ts';
import { markdownTable } from './output.ts';

/** transformers + flash-linear-attention on the H200, backbone only (no tower, no codec). */
export interface PytorchBaseline {
  readonly measured: string;
  readonly batch1: { readonly milliseconds: number; readonly framesPerSecond: number; readonly experts: string };
  readonly batch64: { readonly milliseconds: number; readonly framesPerSecond: number; readonly experts: string };
  readonly prefillRowsPerSecond: number;
}

/** ECOSYSTEM.md's figures, for a run without bench/pytorch-frames.py beside it. */
export const PYTORCH_BASELINE: PytorchBaseline = {
  measured: '2026-12-01, not re-run here; backbone only (no tower)',
  batch1: { milliseconds: 72.7, framesPerSecond: 1000 / 72.7, experts: 'batched_mm' },
  batch64: { milliseconds: 97, framesPerSecond: 657, experts: 'grouped_mm' },
  prefillRowsPerSecond: 2209,
};

/** The baseline bench/pytorch-frames.py measured (its pytorch-frames.json): batch 1 at its faster experts form. */
export function measuredBaseline(json: Record<string, number | string>): PytorchBaseline {
  const batched = Number(json.decode_ms_batch1_batched_mm);
  const grouped = Number(json.decode_ms_batch1_grouped_mm);
  const batch1 = batched <= grouped ? { ms: batched, experts: 'batched_mm' } : { ms: grouped, experts: 'grouped_mm' };
  const batch64 = Number(json.decode_ms_batch64_grouped_mm);
  return {
    measured: `this run, torch ${json.torch}, fla ${json.fla}; backbone only (no tower)`,
    batch1: { milliseconds: batch1.ms, framesPerSecond: 1000 / batch1.ms, experts: batch1.experts },
    batch64: { milliseconds: batch64, framesPerSecond: 64000 / batch64, experts: 'grouped_mm' },
    prefillRowsPerSecond: Number(json.prefill_rows_per_s_4096),
  };
}

/** The goals at the full geometry. */
export const TARGETS = { batch1FramesPerSecond: 250, batch64FramesPerSecond: 2500, weightsPlusLaneGiB: 40 };
const LANE_ROWS_FOR_TARGET = 8192;

const GB = 1e9;
const GiB = 2 ** 30;
const gb = (bytes: number) => (bytes / GB).toFixed(3);
const percent = (value: number) => `${(100 * value).toFixed(1)}%`;

function baselineCell(baseline: PytorchBaseline, batch: number): string {
  const entry = batch === 1 ? baseline.batch1 : batch === 64 ? baseline.batch64 : undefined;
  if (entry === undefined) return '';
  return `${entry.milliseconds.toFixed(1)} ms/step, ${entry.framesPerSecond.toFixed(1)} frames/s (${entry.experts})`;
}

export function framesReport(
  measured: FramesMeasurements,
  device: DeviceProperties,
  baseline: PytorchBaseline = PYTORCH_BASELINE,
): { lines: string[]; json: unknown } {
  const { model, specs, copy } = measured;
  const config = model.config;
  const candidates = model.candidates.ids.length;
  const bytesPerSecond = copy.gigabytesPerSecond * GB;
  const rows = measured.batches.map((result) => {
    const bytes = stepBytes(config, specs, candidates, result.batch, result.position);
    const stepBytesTotal = bytes.weights + bytes.state;
    const rooflineMilliseconds = (1000 * stepBytesTotal) / bytesPerSecond;
    const rooflineFramesPerSecond = (1000 * result.batch) / rooflineMilliseconds;
    return { result, bytes, stepBytesTotal, rooflineMilliseconds, rooflineFramesPerSecond };
  });
  const { text, tower } = config;
  const lines = [
    `Frame step, preset ${measured.options.preset}: ${text.layers} backbone layers (${text.linearAttentionLayers.length} ` +
      `Gated DeltaNet, ${text.fullAttentionLayers.length} attention), ${text.experts} FP8 experts top-${text.expertsPerToken}, ` +
      `tower ${tower.sharedLayers}+${tower.codebookLayers} layers; ${device.name}; ` +
      `copy ${copy.gigabytesPerSecond.toFixed(0)} GB/s (read + written, this run)`,
    `Synthetic weights drawn in device memory (synth's values, seed ${measured.options.seed}): ` +
      `${gb(weightMapBytes(specs))} GB in ${measured.buildSeconds.toFixed(1)} s; plan ${measured.planSeconds.toFixed(1)} s`,
    '',
    ...markdownTable(
      [
        'batch',
        'ms/step',
        'frames/s',
        'read/step GB (weights + state)',
        'bytes/frame MB',
        'roofline frames/s',
        'of roofline',
        'graph alone ms (launch call µs)',
        `PyTorch (${baseline.measured})`,
      ],
      rows.map(({ result, bytes, stepBytesTotal, rooflineFramesPerSecond }) => [
        `${result.batch}`,
        result.stepMilliseconds.toFixed(2),
        result.framesPerSecond.toFixed(1),
        `${gb(stepBytesTotal)} (${gb(bytes.weights)} + ${gb(bytes.state)})`,
        (stepBytesTotal / result.batch / 1e6).toFixed(1),
        rooflineFramesPerSecond.toFixed(0),
        percent(result.framesPerSecond / rooflineFramesPerSecond),
        result.replay
          ? `${result.replay.stepMilliseconds.toFixed(2)} (${result.replay.launchMicroseconds.toFixed(0)})`
          : '—',
        baselineCell(baseline, result.batch),
      ]),
    ),
    `Goals at the full geometry: batch 1 ≥ ${TARGETS.batch1FramesPerSecond} frames/s, batch 64 ≥ ` +
      `${TARGETS.batch64FramesPerSecond} frames/s. Routed experts per layer: expected distinct under uniform routing, ` +
      'E·(1 − (1 − k/E)^B). State: DeltaNet state read + written, K/V rows read to the lane position. Graph alone: ' +
      "the step's recorded graphs (its head, and its tail beside the next head) replayed back to back, without the " +
      "host's part of a step. Steps are queued one ahead, as the engine queues them.",
    `Draws (health: a non-finite model draws one code or ends at once): ` +
      rows
        .map(
          ({ result }) => `batch ${result.batch}: ${result.distinctMain} distinct semantic codes, ${result.ended} ends`,
        )
        .join('; '),
    '',
    ...bytesTable(
      rows.map((row) => row.bytes),
      tower.layers,
      tower.codebookLayers,
    ),
    '',
    ...markdownTable(
      ['prefill rows', 'ms', 'rows/s', `PyTorch rows/s (${baseline.measured})`],
      measured.prefill.map((p) => [
        `${p.rows}`,
        p.milliseconds.toFixed(1),
        p.rowsPerSecond.toFixed(0),
        `${baseline.prefillRowsPerSecond.toFixed(0)}`,
      ]),
    ),
    '',
    ...memoryLines(measured),
  ];
  for (const { batch, profile } of measured.profiles) {
    lines.push('', ...profileTable(`one profiled step at batch ${batch}`, profile));
  }
  for (const { rows, profile } of measured.prefill) {
    lines.push('', ...profileTable(`one profiled prefill of ${rows} rows`, profile));
  }
  const json = {
    device,
    options: measured.options,
    copy,
    buildSeconds: measured.buildSeconds,
    planSeconds: measured.planSeconds,
    weightBytes: weightMapBytes(specs),
    batches: rows,
    prefill: measured.prefill,
    memory: {
      ...measured.memory,
      lane: laneSlabBytes(config, LANE_ROWS_FOR_TARGET),
      rowsPerLane: measured.rowsPerLane,
    },
    profiles: measured.profiles,
    baseline,
    targets: TARGETS,
  };
  return { lines, json };
}

function profileTable(what: string, profile: LaunchProfile): string[] {
  return [
    `Kernels by share of ${what}: ${profile.launches} launches, ${profile.milliseconds.toFixed(2)} ms with an event ` +
      `between launches (${profile.beforeFirstLaunch.toFixed(3)} ms before the first)`,
    ...markdownTable(
      ['kernel', 'launches', 'ms', 'share'],
      profile.kernels.slice(0, 20).map((k) => [k.kernel, `${k.launches}`, k.milliseconds.toFixed(3), percent(k.share)]),
    ),
  ];
}

function bytesTable(all: readonly StepBytes[], towerLayers: number, heads: number): string[] {
  const parts: [string, (b: StepBytes) => number][] = [
    ['attention + DeltaNet projections, norms', (b) => b.projections],
    ['router', (b) => b.router],
    ['routed experts (FP8 + scales)', (b) => b.routedExperts],
    ['shared expert', (b) => b.sharedExpert],
    ['candidate head + final norm', (b) => b.head],
    [`tower (${towerLayers} layers + ${heads} heads)`, (b) => b.tower],
    ['embedding rows', (b) => b.embeddings],
    ['lane state (read + written)', (b) => b.state],
  ];
  return [
    'Bytes one step reads, GB, by part (experts per layer in brackets):',
    ...markdownTable(
      ['part', ...all.map((b) => `batch ${b.batch} (${b.expertsPerLayer.toFixed(1)})`)],
      parts.map(([name, pick]) => [name, ...all.map((b) => gb(pick(b)))]),
    ),
  ];
}

function memoryLines(measured: FramesMeasurements): string[] {
  const { memory, model, specs } = measured;
  const lane = laneSlabBytes(model.config, LANE_ROWS_FOR_TARGET);
  const laneBytes = lane.keyValues + lane.deltaNet;
  const slots = measured.options.lanes + 1;
  const rowsPerSlot = Math.max(measured.rowsPerLane, model.prefillChunk + 1);
  const slabs = laneSlabBytes(model.config, rowsPerSlot);
  const slabBytes = slots * (slabs.keyValues + slabs.deltaNet);
  const built = memory.built.allocatorBytes - memory.start.allocatorBytes;
  const planned = memory.planned.allocatorBytes - memory.built.allocatorBytes;
  // Scratch and the experts re-laid out for the kernels come with plan, which frees the per-expert copies they replace.
  const beyondSlabs = planned - slabBytes;
  const gib = (bytes: number) => (bytes / GiB).toFixed(2);
  const expertBytes = weightMapBytes(specs.filter((spec) => spec.role === 'expert' || spec.role === 'expert_scale'));
  return markdownTable(
    ['device memory', 'GiB'],
    [
      ['weights (weight map: bf16, FP8 experts + scales)', gib(weightMapBytes(specs))],
      ['allocated by the build (weights, arenas and uploads)', gib(built)],
      [`allocated by plan: slabs of ${slots} slots × ${rowsPerSlot} rows`, gib(slabBytes)],
      ['allocated by plan beyond the slabs, net: scratch, experts re-laid out less the copies freed', gib(beyondSlabs)],
      [
        `one lane at ${LANE_ROWS_FOR_TARGET} rows: K/V ${(lane.keyValues / GiB).toFixed(3)} + DeltaNet ${(lane.deltaNet / GiB).toFixed(3)}`,
        (laneBytes / GiB).toFixed(3),
      ],
      [
        `build + plan beyond slabs + one lane at ${LANE_ROWS_FOR_TARGET} rows (goal ≤ ${TARGETS.weightsPlusLaneGiB})`,
        gib(built + beyondSlabs + laneBytes),
      ],
      [
        'of which the routed experts (FP8 + scales, held once: re-laid out at plan, the loaded copies freed)',
        gib(expertBytes),
      ],
      ['in use by the process after plan (driver)', gib(memory.planned.driverBytes)],
    ],
  );
}
