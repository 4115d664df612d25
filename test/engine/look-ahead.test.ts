// The scheduler's look-ahead: the next round's step is queued before this round's is read back. Every request gets
// the frames, the finish and the terminal event it gets without look-ahead; no lane is stepped past its frame
// budget; a step queued for a lane that was cancelled, failed or moved to its next piece is nobody's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NullCodec } from '../../src/engine/null-codec.ts';
import { NullSpeechModel } from '../../src/engine/null-model.ts';
import { NullTextFrontEnd } from '../../src/engine/null-text.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import type { SpeechRuntime } from '../../src/engine/runtime.ts';
import { Scheduler } from '../../src/engine/scheduler.ts';
import { DramaError } from '../../src/errors.ts';
import { DEFAULT_SAMPLING, type FrameOutcome, type Lane, type QueuedStep } from '../../src/model/types.ts';

const CHUNK = 8;

interface Ticket extends QueuedStep {
  readonly outcomes: FrameOutcome[];
  collected: boolean;
}

/** A null model whose steps can be queued: a step's outcomes are fixed when it is queued, as on a device. */
class QueueingModel extends NullSpeechModel {
  readonly stepsRunAhead = true;
  /** Steps queued and not collected; the most there ever were. */
  outstanding = 0;
  mostOutstanding = 0;
  /** Steps queued per lane. */
  readonly steps = new Map<Lane, number>();
  failNextCollect = false;

  enqueueStep(lanes: readonly Lane[]): QueuedStep {
    const outcomes = super.step(lanes);
    for (const lane of lanes) this.steps.set(lane, (this.steps.get(lane) ?? 0) + 1);
    this.outstanding += 1;
    this.mostOutstanding = Math.max(this.mostOutstanding, this.outstanding);
    const ticket: Ticket = { lanes, outcomes, collected: false };
    return ticket;
  }

  collectStep(queued: QueuedStep): FrameOutcome[] {
    const ticket = queued as Ticket;
    assert.equal(ticket.collected, false, 'a step is collected once');
    ticket.collected = true;
    this.outstanding -= 1;
    if (this.failNextCollect) {
      this.failNextCollect = false;
      throw new DramaError('PLANTED_STEP_FAULT', 'the step fails on the device', { kind: 'device' });
    }
    return ticket.outcomes;
  }
}

interface Job {
  readonly text: string;
  readonly frameBudget: number;
  /** Texts of further pieces (each a fresh lane after the one before ends its speech). */
  readonly more?: readonly string[];
  /** Absent: 70 + the job's index. */
  readonly seed?: number;
}

interface Served {
  readonly pcm: Buffer;
  readonly end: EngineEvent | undefined;
}

/** Serves the jobs (each arriving at its round) to the end; `during(round)` runs before each round. */
function serve(
  model: NullSpeechModel,
  jobs: readonly (Job & { arrives?: number })[],
  options: { lanes: number; lookAhead: boolean; during?: (round: number, scheduler: Scheduler) => void },
): Served[] {
  const events: EngineEvent[] = [];
  const rt: SpeechRuntime = { modelId: 'null', model, codec: new NullCodec(), text: new NullTextFrontEnd() };
  const scheduler = new Scheduler(
    rt,
    { lanes: options.lanes, prefillChunk: CHUNK, lookAhead: options.lookAhead },
    (event) => events.push(event),
  );
  const enqueue = (job: Job, index: number) => {
    const pieces = [job.text, ...(job.more ?? [])].map((text) =>
      rt.text.prompt({ text, instructions: undefined, references: [], normalize: false }),
    );
    const promptRows = Math.max(...pieces.map((piece) => piece.rows.tokens.length));
    scheduler.enqueue({
      id: index + 1,
      pieces,
      sampling: { ...DEFAULT_SAMPLING, seed: job.seed ?? 70 + index },
      admission: { inputTokens: 1, promptRows, pieces: pieces.length, frameBudget: job.frameBudget },
    });
  };
  let round = 0;
  const late = jobs.map((job, index) => ({ job, index })).filter(({ job }) => (job.arrives ?? 0) > 0);
  jobs.forEach((job, index) => {
    if ((job.arrives ?? 0) === 0) enqueue(job, index);
  });
  while (scheduler.hasWork() || late.some(({ job }) => job.arrives! > round)) {
    for (const { job, index } of late) if (job.arrives === round) enqueue(job, index);
    options.during?.(round, scheduler);
    if (scheduler.hasWork()) scheduler.runRound();
    round += 1;
  }
  return jobs.map((_, index) => {
    const mine = events.filter((event) => 'id' in event && event.id === index + 1);
    const pcm = mine.flatMap((event) => (event.type === 'audio' ? [Buffer.from(event.pcm.buffer)] : []));
    return { pcm: Buffer.concat(pcm), end: mine.at(-1) };
  });
}

// The null model speaks half a frame per prompt row: these end their speech after 10 to 30 frames, or at budget.
const JOBS: Job[] = [
  { text: 'a short one', frameBudget: 200, seed: 1 },
  { text: 'a somewhat longer request than that one', frameBudget: 9, seed: 2 },
  { text: 'x', frameBudget: 200, more: ['and a second piece', 'y'], seed: 3 },
  { text: 'the third of four, of middling length', frameBudget: 14, seed: 4 },
  { text: 'ends its speech well before its budget', frameBudget: 1000, seed: 5 },
];

test('look-ahead gives every request the frames and the end it gets without, with steps queued ahead', () => {
  const ahead = new QueueingModel();
  const served = serve(ahead, JOBS, { lanes: 4, lookAhead: true });
  const plain = serve(new QueueingModel(), JOBS, { lanes: 4, lookAhead: false });
  const alone = JOBS.map((job) => serve(new QueueingModel(), [job], { lanes: 1, lookAhead: true })[0]!);
  served.forEach((reply, index) => {
    assert.equal(reply.end?.type, 'finished', `request ${index}`);
    assert.ok(reply.pcm.length > 0);
    assert.ok(reply.pcm.equals(plain[index]!.pcm), `request ${index}: the frames without look-ahead`);
    assert.deepEqual(reply.end, plain[index]!.end);
    assert.ok(reply.pcm.equals(alone[index]!.pcm), `request ${index}: the frames served alone`);
  });
  assert.equal(ahead.mostOutstanding, 2, 'a step was queued while the one before was not yet read back');
  assert.equal(ahead.liveLanes, 0, 'every lane was released');
});

test('a lane reaching its frame budget is not stepped past it', () => {
  const model = new QueueingModel();
  const lanes: Lane[] = [];
  const newLane = model.newLane.bind(model);
  model.newLane = (sampling) => {
    const lane = newLane(sampling);
    lanes.push(lane);
    return lane;
  };
  const budgets = [3, 5, 9];
  const served = serve(
    model,
    budgets.map((frameBudget) => ({ text: 'long enough to speak past every budget here', frameBudget })),
    { lanes: 3, lookAhead: true },
  );
  served.forEach((reply, index) => {
    assert.equal(reply.end?.type === 'finished' && reply.end.reason, 'length');
    assert.equal(
      reply.pcm.length,
      budgets[index]! * 2048 * 4,
      'a float32 frame of 2048 samples for each frame of the budget',
    );
    assert.equal(model.steps.get(lanes[index]!), budgets[index], `request ${index}: one step a frame of its budget`);
  });
  assert.equal(model.mostOutstanding, 2);
});

test('a request arriving while a step is queued, and one cancelled with a step queued, leave the others unchanged', () => {
  const jobs = [
    { text: 'the first request, speaking for a while', frameBudget: 200 },
    { text: 'the second, cancelled early on', frameBudget: 200 },
    { text: 'a late arrival', frameBudget: 200, arrives: 6 },
  ];
  const cancelAt = (round: number, scheduler: Scheduler) => {
    if (round === 9) scheduler.cancel(2);
  };
  const model = new QueueingModel();
  const served = serve(model, jobs, { lanes: 3, lookAhead: true, during: cancelAt });
  const plain = serve(new QueueingModel(), jobs, { lanes: 3, lookAhead: false, during: cancelAt });
  assert.equal(served[1]!.end?.type, 'cancelled');
  for (const index of [0, 2]) {
    assert.equal(served[index]!.end?.type, 'finished');
    assert.ok(served[index]!.pcm.equals(plain[index]!.pcm), `request ${index}`);
  }
  assert.equal(model.liveLanes, 0);
});

test('a step that fails when read back fails the requests it held; the next request is served', () => {
  const model = new QueueingModel();
  const jobs = [
    { text: 'first of two in the failing step', frameBudget: 200 },
    { text: 'second of two in the failing step', frameBudget: 200 },
  ];
  const served = serve(model, jobs, {
    lanes: 2,
    lookAhead: true,
    during: (round) => {
      if (round === 8) model.failNextCollect = true;
    },
  });
  assert.deepEqual(
    served.map((reply) => reply.end?.type),
    ['failed', 'failed'],
  );
  assert.equal(model.liveLanes, 0, 'their lanes were released');
  const after = serve(model, [{ text: 'served after the failure', frameBudget: 200 }], { lanes: 2, lookAhead: true });
  assert.equal(after[0]!.end?.type, 'finished');
  assert.ok(after[0]!.pcm.length > 0);
});

test('look-ahead holds while requests wait for a lane to end; each gets the frames it gets without', () => {
  const jobs = Array.from({ length: 6 }, (_, index) => ({
    text: `request ${index}, ${'of some length '.repeat(1 + (index % 3))}`,
    frameBudget: 200,
    seed: 10 + index,
  }));
  const model = new QueueingModel();
  let queuedWhileWaiting = 0;
  const served = serve(model, jobs, {
    lanes: 2,
    lookAhead: true,
    during: (_round, scheduler) => {
      if (scheduler.waitingCount > 0 && model.outstanding > 0) queuedWhileWaiting += 1;
    },
  });
  const plain = serve(new QueueingModel(), jobs, { lanes: 2, lookAhead: false });
  served.forEach((reply, index) => {
    assert.equal(reply.end?.type, 'finished');
    assert.ok(reply.pcm.equals(plain[index]!.pcm), `request ${index}`);
  });
  assert.ok(queuedWhileWaiting > 0, 'a step was queued ahead while requests waited for a lane');
  assert.equal(model.liveLanes, 0);
});
