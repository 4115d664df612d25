// Reads Nsight Compute's --csv output (one row per kernel and metric) into kernel durations in launch order, and
// splits them into the steps that were profiled one after another.

export interface KernelDuration {
  readonly id: number;
  readonly name: string;
  readonly nanoseconds: number;
}

export interface KernelTotal {
  readonly name: string;
  readonly launches: number;
  readonly nanoseconds: number;
}

export interface StepSummary {
  /** The batch of the step, or 0 when the launches could not be split evenly between the steps. */
  readonly batch: number;
  readonly launches: number;
  readonly totalNanoseconds: number;
  /** By summed duration, largest first. */
  readonly kernels: readonly KernelTotal[];
}

/** Splits one CSV line, with quoted fields that may hold commas and doubled quotes. */
function fields(line: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index]!;
    if (quoted) {
      if (char === '"' && line[index + 1] === '"') {
        current += '"';
        index++;
      } else if (char === '"') quoted = false;
      else current += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      out.push(current);
      current = '';
    } else current += char;
  }
  out.push(current);
  return out;
}

/** Every gpu__time_duration.sum row (in nanoseconds: the profiler was asked for base units), in ID order. */
export function kernelDurations(csv: string): KernelDuration[] {
  const lines = csv.split(/\r?\n/);
  const headerIndex = lines.findIndex((line) => line.includes('"Kernel Name"') && line.includes('"Metric Value"'));
  if (headerIndex < 0) return [];
  const header = fields(lines[headerIndex]!);
  const column = (name: string) => header.indexOf(name);
  const [id, kernel, metric, unit, value] = ['ID', 'Kernel Name', 'Metric Name', 'Metric Unit', 'Metric Value'].map(
    column,
  ) as [number, number, number, number, number];
  const durations: KernelDuration[] = [];
  for (const line of lines.slice(headerIndex + 1)) {
    if (!line.startsWith('"')) continue;
    const row = fields(line);
    if (row[metric] !== 'gpu__time_duration.sum') continue;
    const scale = row[unit] === 'usecond' ? 1e3 : row[unit] === 'msecond' ? 1e6 : 1;
    const nanoseconds = Number((row[value] ?? '').replace(/,/g, '')) * scale;
    durations.push({ id: Number(row[id]), name: row[kernel] ?? '?', nanoseconds });
  }
  return durations.sort((a, b) => a.id - b.id);
}

function summarise(batch: number, durations: readonly KernelDuration[]): StepSummary {
  const totals = new Map<string, { launches: number; nanoseconds: number }>();
  for (const { name, nanoseconds } of durations) {
    const total = totals.get(name) ?? { launches: 0, nanoseconds: 0 };
    total.launches += 1;
    total.nanoseconds += nanoseconds;
    totals.set(name, total);
  }
  const kernels = [...totals].map(([name, t]) => ({ name, ...t })).sort((a, b) => b.nanoseconds - a.nanoseconds);
  const totalNanoseconds = durations.reduce((sum, d) => sum + d.nanoseconds, 0);
  return { batch, launches: durations.length, totalNanoseconds, kernels };
}

/**
 * The batches whose steps bench/gpu-frames.ts profiles: the first and the last of DRAMA3_FRAMES_BATCHES (its text;
 * unset or empty: 1 and 64), one step when they are the same batch.
 */
export function profiledBatches(framesBatches: string | undefined): number[] {
  const text = framesBatches?.trim() || '1,64';
  const batches = text.split(',').map((part) => Number(part.trim()));
  const first = batches[0]!;
  const last = batches.at(-1)!;
  return first === last ? [first] : [first, last];
}

/** One summary per batch when the launches split evenly between them (each step records the same kernels). */
export function summariseSteps(durations: readonly KernelDuration[], batches: readonly number[]): StepSummary[] {
  if (durations.length === 0) return [];
  if (durations.length % batches.length !== 0) return [summarise(0, durations)];
  const each = durations.length / batches.length;
  return batches.map((batch, index) => summarise(batch, durations.slice(index * each, (index + 1) * each)));
}
