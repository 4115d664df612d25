// Where a step's device time goes, by kernel: the launch observer (src/backend/cuda/ops/launch.ts) records an event on
// the stream before each launch, and one more closes the step; a kernel's share runs from its launch's event to the
// next one (copies and cuBLASLt calls between two of our launches count to the kernel before them). Events between
// launches serialise them and stop programmatic dependent launch from overlapping, so the profiled step is slower
// than the timed one: read the shares, not the sum. Without a captured graph, gaps where the device waits for the
// host to launch count to the kernel before the gap. Events come from a pool made before the step.
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { Handle } from '../../src/backend/cuda/driver.ts';
import { observeLaunches } from '../../src/backend/cuda/ops/launch.ts';

export interface KernelShare {
  readonly kernel: string;
  readonly launches: number;
  readonly milliseconds: number;
  readonly share: number;
}

export interface LaunchProfile {
  readonly launches: number;
  /** From the step's first event to its last. */
  readonly milliseconds: number;
  /** Before the first launch (table uploads). */
  readonly beforeFirstLaunch: number;
  readonly kernels: readonly KernelShare[];
  /** Every launch in order with its own time (when asked for: a long call's slowest launches, found by index). */
  readonly sequence?: readonly { readonly kernel: string; readonly milliseconds: number }[];
}

/** Events made before a step, so that the observer only records them; grows if a step launches more. */
const EVENT_POOL = 4096;

/** Profiles one call of `step` (which must end with its work finished, as a frame step's read back does). */
export function profileLaunches(
  cuda: CudaContext,
  step: () => void,
  options: { readonly sequence?: boolean } = {},
): LaunchProfile {
  const { driver, stream } = cuda;
  const pool: Handle[] = Array.from({ length: EVENT_POOL }, () => driver.createEvent());
  const events: Handle[] = [];
  const names: string[] = [];
  const record = (name: string) => {
    if (events.length === pool.length) pool.push(driver.createEvent());
    const event = pool[events.length]!;
    driver.recordEvent(event, stream);
    events.push(event);
    names.push(name);
  };
  record('start');
  const previous = observeLaunches((kernel) => record(`${kernel.family}/${kernel.name}`));
  try {
    step();
  } finally {
    observeLaunches(previous);
  }
  record('end');
  driver.synchronizeEvent(events.at(-1)!);
  const totals = new Map<string, { launches: number; milliseconds: number }>();
  const sequence: { kernel: string; milliseconds: number }[] = [];
  for (let index = 1; index + 1 < events.length; index++) {
    const name = names[index]!;
    const entry = totals.get(name) ?? { launches: 0, milliseconds: 0 };
    const milliseconds = driver.elapsedMilliseconds(events[index]!, events[index + 1]!);
    entry.launches += 1;
    entry.milliseconds += milliseconds;
    totals.set(name, entry);
    sequence.push({ kernel: name, milliseconds });
  }
  const milliseconds = driver.elapsedMilliseconds(events[0]!, events.at(-1)!);
  const beforeFirstLaunch = events.length > 2 ? driver.elapsedMilliseconds(events[0]!, events[1]!) : 0;
  for (const event of pool) driver.destroyEvent(event);
  const kernels = [...totals.entries()]
    .map(([kernel, entry]) => ({ kernel, ...entry, share: entry.milliseconds / milliseconds }))
    .sort((a, b) => b.milliseconds - a.milliseconds);
  return {
    launches: events.length - 2,
    milliseconds,
    beforeFirstLaunch,
    kernels,
    ...(options.sequence === true ? { sequence } : {}),
  };
}
