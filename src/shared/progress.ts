// One progress display for long work (writing checkpoints, loading weights): a cli-progress bar on a terminal, and
// on anything else (CI logs, pipes, a worker thread's stderr) one plain line per tenth of the way, so logs stay short
// but show movement. A byte count can show its rate since the display began (GB/s, decimal as disks are sold).
import cliProgress from 'cli-progress';

export type ProgressUnit = 'bytes' | 'items';

export interface Progress {
  /** Reports `done` out of `total` (total may grow while a lazy source is being counted). */
  update(done: number, total: number): void;
  /** Ends the display (prints the final line when not on a terminal). */
  stop(): void;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `1536` → `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

function formatAmount(value: number, unit: ProgressUnit): string {
  return unit === 'bytes' ? formatBytes(value) : String(value);
}

/** `done` bytes over the seconds since `startedMs`, as `, 1.23 GB/s` (empty before any time has passed). */
function formatRate(done: number, startedMs: number): string {
  const seconds = (performance.now() - startedMs) / 1000;
  return seconds > 0 ? `, ${(done / seconds / 1e9).toFixed(2)} GB/s` : '';
}

/** Steps of the plain display: a line each time another tenth is done. */
const PLAIN_STEPS = 10;

export function createProgress(
  label: string,
  options: { unit?: ProgressUnit; stream?: NodeJS.WriteStream; rate?: boolean } = {},
): Progress {
  const unit = options.unit ?? 'items';
  const stream = options.stream ?? process.stderr;
  const startedMs = performance.now();
  const rate = (done: number) => (options.rate === true && unit === 'bytes' ? formatRate(done, startedMs) : '');
  if (stream.isTTY === true) return terminalProgress(label, unit, stream, rate);
  let lastStep = -1;
  let last = { done: 0, total: 0 };
  const line = (done: number, total: number) => {
    const percent = total > 0 ? Math.floor((100 * done) / total) : 100;
    stream.write(`${label}: ${percent}% (${formatAmount(done, unit)} of ${formatAmount(total, unit)}${rate(done)})\n`);
  };
  return {
    update(done, total) {
      last = { done, total };
      const step = total > 0 ? Math.floor((PLAIN_STEPS * done) / total) : PLAIN_STEPS;
      if (step > lastStep && step < PLAIN_STEPS) {
        lastStep = step;
        line(done, total);
      }
    },
    stop() {
      line(last.done, last.total);
    },
  };
}

function terminalProgress(
  label: string,
  unit: ProgressUnit,
  stream: NodeJS.WriteStream,
  rate: (done: number) => string,
): Progress {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {amount} | ETA {eta_formatted}`,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total) {
      const amount = `${formatAmount(done, unit)} of ${formatAmount(total, unit)}${rate(done)}`;
      if (!started) {
        bar.start(total, done, { amount });
        started = true;
        return;
      }
      bar.setTotal(total);
      bar.update(done, { amount });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
