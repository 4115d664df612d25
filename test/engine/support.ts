// Shared test support: a job with defaults, running one request on an engine to its end, and a null model that
// records the lane capacities it is planned for.
import { concatSamples } from '../../src/audio/pcm.ts';
import { Engine, type RequestEvent, type RequestHandle } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../../src/engine/engine-core.ts';
import { type NullModelOptions, NullSpeechModel } from '../../src/engine/null-model.ts';
import type { SpeechJob } from '../../src/engine/protocol.ts';
import { DEFAULT_SAMPLING, type LaneCapacity } from '../../src/model/types.ts';

export function job(text: string, overrides: Partial<SpeechJob> = {}): SpeechJob {
  return {
    text,
    instructions: undefined,
    references: [],
    sampling: { ...DEFAULT_SAMPLING, seed: 7 },
    maxFrames: undefined,
    normalize: true,
    pieceLength: undefined,
    ...overrides,
  };
}

export function startNullEngine(
  settings: Partial<EngineSettings> = {},
  model: NullModelOptions = {},
  thread: 'inline' | 'worker' = 'inline',
  queueLimit = 4,
): Promise<Engine> {
  return Engine.start({
    runtime: { kind: 'null', model },
    settings: { ...DEFAULT_ENGINE_SETTINGS, ...settings },
    queueLimit,
    thread,
  });
}

export interface Outcome {
  readonly events: RequestEvent[];
  readonly pcm: Float32Array;
  readonly groups: number[];
  readonly last: RequestEvent;
}

/** Submits; `done` resolves with every event once the request ends (finished, failed or cancelled). */
export function submit(
  engine: Engine,
  request: SpeechJob,
  onEvent?: (event: RequestEvent) => void,
): { handle: RequestHandle; done: Promise<Outcome> } {
  let handle: RequestHandle | undefined;
  const done = new Promise<Outcome>((resolve) => {
    const events: RequestEvent[] = [];
    handle = engine.submit(request, (event) => {
      events.push(event);
      onEvent?.(event);
      if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
        const pcm = concatSamples(events.flatMap((item) => (item.type === 'audio' ? [item.pcm] : [])));
        const groups = events.flatMap((item) => (item.type === 'audio' ? [item.frames] : []));
        resolve({ events, pcm, groups, last: event });
      }
    });
  });
  return { handle: handle!, done };
}

export function runToEnd(engine: Engine, request: SpeechJob): Promise<Outcome> {
  return submit(engine, request).done;
}

/** The null model with a plan that records each capacity it is asked for. */
export function recordingModel(): { model: NullSpeechModel; planned: LaneCapacity[] } {
  const planned: LaneCapacity[] = [];
  const model = Object.assign(new NullSpeechModel({ contextRows: 8192 }), {
    plan: (capacity: LaneCapacity) => {
      planned.push(capacity);
    },
  });
  return { model, planned };
}
