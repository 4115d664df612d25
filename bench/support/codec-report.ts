// The codec bench's table: audio-seconds per second per precision and lane count, the TFLOP/s its FLOP count implies
// as a share of the dense bf16 GEMM rate measured in the same run (the tensor cores' ceiling), and PyTorch's
// whole-batch decode at the same precision and lane count beside it: bench/pytorch-codec.py's pytorch-codec.json
// when it ran first in the same call, else the figures of its last run, dated.
import type { CodecPrecision } from '../../src/backend/cuda/ops/codecConvArguments.ts';
import { markdownTable } from './output.ts';

export interface CodecRow {
  readonly precision: CodecPrecision;
  readonly lanes: number;
  readonly audioSecondsPerSecond: number;
  readonly realTimePerStream: number;
  readonly teraflops: number;
}

export interface CodecBaselineRow {
  readonly precision: string;
  readonly lanes: number;
  readonly audioSecondsPerSecond: number;
  readonly firstFrameMs: number;
}

export interface CodecBaseline {
  readonly measured: string;
  readonly framesPerLane: number;
  readonly rows: readonly CodecBaselineRow[];
}

/** bench/pytorch-codec.py on the H200 (2026-12-02), for a run without its JSON beside it. */
export const PYTORCH_CODEC_BASELINE: CodecBaseline = {
  measured: '2026-12-02, not re-run here',
  framesPerLane: 52,
  rows: [
    { precision: 'fp16', lanes: 1, audioSecondsPerSecond: 113.2, firstFrameMs: 15.94 },
    { precision: 'fp16', lanes: 8, audioSecondsPerSecond: 327.5, firstFrameMs: 15.94 },
    { precision: 'fp16', lanes: 64, audioSecondsPerSecond: 482.8, firstFrameMs: 15.94 },
    { precision: 'fp32', lanes: 1, audioSecondsPerSecond: 87.9, firstFrameMs: 25.47 },
    { precision: 'fp32', lanes: 8, audioSecondsPerSecond: 268.9, firstFrameMs: 25.47 },
    { precision: 'fp32', lanes: 64, audioSecondsPerSecond: 351.4, firstFrameMs: 25.47 },
  ],
};

/** The baseline pytorch-codec.json holds (rows that ran out of memory carry an error and are left out). */
export function measuredCodecBaseline(json: {
  torch: string;
  framesPerLane: number;
  rows: readonly Partial<CodecBaselineRow & { error: string }>[];
}): CodecBaseline {
  const rows = json.rows
    .filter((row) => row.error === undefined)
    .map(({ precision, lanes, audioSecondsPerSecond, firstFrameMs }) => ({
      precision: String(precision),
      lanes: Number(lanes),
      audioSecondsPerSecond: Number(audioSecondsPerSecond),
      firstFrameMs: Number(firstFrameMs),
    }));
  return { measured: `this run, torch ${json.torch}`, framesPerLane: json.framesPerLane, rows };
}

/** The PyTorch precision our precision is compared with: fp16 weights and inputs, or fp32; none for f16-weights. */
const BASELINE_PRECISION: Record<CodecPrecision, string | undefined> = {
  f16: 'fp16',
  'f16-weights': undefined,
  f32: 'fp32',
};

export function codecTable(
  rows: readonly CodecRow[],
  firstFrameMs: Readonly<Record<string, number>>,
  ceilingTeraflops: number,
  baseline: CodecBaseline,
): string[] {
  const pytorch = (row: CodecRow) =>
    baseline.rows.find((entry) => entry.precision === BASELINE_PRECISION[row.precision] && entry.lanes === row.lanes);
  return markdownTable(
    [
      'weights',
      'lanes',
      'audio-s/s (median of 3)',
      '× real time per stream',
      'TFLOP/s',
      'of the dense GEMM rate',
      'first frame ms (median of 21)',
      `PyTorch audio-s/s, ${baseline.framesPerLane} frames a lane at once (${baseline.measured})`,
      'PyTorch first frame ms',
    ],
    rows.map((row) => {
      const entry = pytorch(row);
      return [
        row.precision,
        String(row.lanes),
        row.audioSecondsPerSecond.toFixed(1),
        row.realTimePerStream.toFixed(2),
        row.teraflops.toFixed(2),
        `${((100 * row.teraflops) / ceilingTeraflops).toFixed(1)}%`,
        firstFrameMs[row.precision]?.toFixed(2) ?? '',
        entry === undefined ? '' : entry.audioSecondsPerSecond.toFixed(1),
        entry === undefined ? '' : entry.firstFrameMs.toFixed(2),
      ];
    }),
  );
}
