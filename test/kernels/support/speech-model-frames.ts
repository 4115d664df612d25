// Frames of requests on a speech model for contracts 1–3: a request alone (in a chosen prefill chunk), requests
// batched with neighbours that join at different rounds (as test/model/batch.test.ts does), requests prefilled
// together in one joint prefill, and the first mismatch between two frame lists.
import { generateFrames } from '../../../src/model/generate.ts';
import {
  DEFAULT_SAMPLING,
  type PromptRows,
  type SamplingSettings,
  type SpeechModel,
} from '../../../src/model/types.ts';
import { speechPrompt } from './speech-model-checkpoint.ts';

export interface FramesRequest {
  readonly rows: PromptRows;
  readonly sampling: SamplingSettings;
}

/** Frames as lists, with [−1] closing a lane that drew end of speech. */
export type Drawn = number[][];

/** `count` requests of different prompt lengths (text, code, text rows), seeds and settings; one is greedy. */
export function contractRequests(semanticBegin: number, count: number, longest: number): FramesRequest[] {
  return Array.from({ length: count }, (_, index) => {
    const total = Math.max(12, Math.round((longest * (1 + ((index * 5) % count))) / count));
    const textRows = Math.floor(total / 3);
    const codeRows = Math.floor(total / 2);
    const rows = speechPrompt(semanticBegin, { textRows, codeRows, tailRows: total - textRows - codeRows }, index);
    const sampling: SamplingSettings = {
      ...DEFAULT_SAMPLING,
      seed: 1000 + index * 17,
      topK: [30, 0, 5, 100][index % 4]!,
      greedy: index === 6,
    };
    return { rows, sampling };
  });
}

export function framesAlone(model: SpeechModel, request: FramesRequest, frames: number, chunk: number): Drawn {
  const result = generateFrames(model, request.rows, {
    sampling: request.sampling,
    maxFrames: frames,
    prefillChunk: chunk,
  });
  const drawn = result.frames.map((frame) => Array.from(frame));
  return result.finishReason === 'stop' ? [...drawn, [-1]] : drawn;
}

/**
 * The requests batched: request j is prefilled and joins the step at round j · joinSpacing, then leaves after `frames`
 * frames. At the default spacing of 2 at most about frames / 2 + 1 lanes step together, whatever the group's size;
 * a spacing of 0 starts the whole group together (every lane a row of every step until it ends), its positions
 * still apart where the prompts' lengths differ.
 */
export function framesBatched(
  model: SpeechModel,
  group: readonly FramesRequest[],
  frames: number,
  chunk: number,
  joinSpacing = 2,
): Drawn[] {
  const lanes = group.map((request) => model.newLane(request.sampling));
  const drawn: Drawn[] = group.map(() => []);
  const active: number[] = [];
  const done = (index: number) => drawn[index]!.length >= frames || drawn[index]!.at(-1)?.[0] === -1;
  const lastJoin = joinSpacing * (group.length - 1);
  try {
    for (let round = 0; active.length > 0 || round <= lastJoin; round++) {
      group.forEach((request, index) => {
        if (index * joinSpacing !== round) return;
        for (let from = 0; from < request.rows.tokens.length; from += chunk)
          model.prefill(lanes[index]!, request.rows, from, Math.min(request.rows.tokens.length, from + chunk));
        active.push(index);
      });
      if (active.length === 0) continue;
      const outcomes = model.step(active.map((index) => lanes[index]!));
      outcomes.forEach((outcome, position) => {
        drawn[active[position]!]!.push(outcome.end ? [-1] : Array.from(outcome.frame));
      });
      for (const index of active.filter(done)) active.splice(active.indexOf(index), 1);
    }
  } finally {
    for (const lane of lanes) model.release(lane);
  }
  return drawn;
}

/**
 * The requests prefilled one by one, then stepped together with every step queued before the one before it is read
 * back (the scheduler's look-ahead): each step's tables are written while the step before it may still run. A lane
 * that ends is stepped on with the others; what it draws after its end is not kept.
 */
export function framesQueuedAhead(
  model: SpeechModel,
  group: readonly FramesRequest[],
  frames: number,
  chunk: number,
): Drawn[] {
  const { enqueueStep, collectStep } = model;
  if (enqueueStep === undefined || collectStep === undefined) throw new Error('the model cannot queue steps');
  const lanes = group.map((request) => model.newLane(request.sampling));
  const drawn: Drawn[] = group.map(() => []);
  try {
    group.forEach(({ rows }, index) => {
      for (let from = 0; from < rows.tokens.length; from += chunk)
        model.prefill(lanes[index]!, rows, from, Math.min(rows.tokens.length, from + chunk));
    });
    let queued = enqueueStep.call(model, lanes);
    for (let step = 0; step < frames; step++) {
      const next = step + 1 < frames ? enqueueStep.call(model, lanes) : undefined;
      collectStep.call(model, queued).forEach((outcome, index) => {
        const mine = drawn[index]!;
        if (mine.length < frames && mine.at(-1)?.[0] !== -1) mine.push(outcome.end ? [-1] : Array.from(outcome.frame));
      });
      if (next !== undefined) queued = next;
    }
  } finally {
    for (const lane of lanes) model.release(lane);
  }
  return drawn;
}

/** The requests prefilled together in one joint prefill (the model packs the calls), then stepped together. */
export function framesPrefilledTogether(model: SpeechModel, group: readonly FramesRequest[], frames: number): Drawn[] {
  const lanes = group.map((request) => model.newLane(request.sampling));
  const drawn: Drawn[] = group.map(() => []);
  try {
    model.prefillTogether(
      group.map((request, index) => ({
        lane: lanes[index]!,
        rows: request.rows,
        from: 0,
        to: request.rows.tokens.length,
      })),
    );
    let active = group.map((_, index) => index);
    while (active.length > 0) {
      const outcomes = model.step(active.map((index) => lanes[index]!));
      outcomes.forEach((outcome, position) => {
        drawn[active[position]!]!.push(outcome.end ? [-1] : Array.from(outcome.frame));
      });
      active = active.filter((index) => drawn[index]!.length < frames && drawn[index]!.at(-1)?.[0] !== -1);
    }
  } finally {
    for (const lane of lanes) model.release(lane);
  }
  return drawn;
}

/** The first (frame, column) where two drawn lists differ, with both values; undefined when they are equal. */
export function firstDrawnMismatch(expected: Drawn, actual: Drawn): string | undefined {
  for (let frame = 0; frame < Math.max(expected.length, actual.length); frame++) {
    const x = expected[frame];
    const y = actual[frame];
    if (x === undefined || y === undefined) {
      return `frame ${frame}: present on one side only (${expected.length} vs ${actual.length} frames)`;
    }
    for (let column = 0; column < Math.max(x.length, y.length); column++) {
      if (x[column] === y[column]) continue;
      return `frame ${frame} column ${column}: expected ${x[column]}, got ${y[column]} ([${x.join(',')}] vs [${y.join(',')}])`;
    }
  }
  return undefined;
}
