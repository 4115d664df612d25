// Scheduler and engine on the null model: budgets, decode groups, determinism, concurrency, cancellation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_ENGINE_RESTARTS } from '../../src/engine/engine.ts';
import { job, type Outcome, runToEnd, startNullEngine, submit } from './support.ts';

test('a request speaks prompt-derived frames, decoded in groups 1, 4, 8, 16, 16…', async () => {
  const engine = await startNullEngine();
  // 80 code points + 8 header rows = 88 rows; the null model speaks rows × 0.5 = 44 frames.
  const outcome = await runToEnd(engine, job('a'.repeat(80)));
  assert.equal(outcome.last.type, 'finished');
  assert.deepEqual(outcome.groups, [1, 4, 8, 16, 15]);
  assert.equal(outcome.pcm.length, 44 * 2048);
  if (outcome.last.type === 'finished') {
    assert.equal(outcome.last.reason, 'stop');
    assert.deepEqual(outcome.last.usage, { inputTokens: 80, outputFrames: 44 });
  }
  await engine.close();
});

test('the round times count prefilled rows and lane steps, rounds that prefill apart from rounds that only step', async () => {
  const engine = await startNullEngine({ prefillChunk: 32 });
  // 88 prompt rows in chunks of at most 32; then 44 frames and the end of speech, one lane step each.
  await runToEnd(engine, job('a'.repeat(80)));
  const time = engine.stats.roundTime!;
  assert.equal(time.prefillRows, 88);
  assert.ok(time.prefillRounds >= 3);
  assert.equal(time.laneSteps, 45);
  // Every round either prefilled or only stepped; the last prefill round also took the first step.
  assert.equal(time.prefillRounds + time.stepRounds, engine.stats.rounds);
  assert.equal(time.stepRounds, 44);
  assert.ok(time.prefillRoundMs > 0 && time.stepRoundMs > 0);
  await engine.close();
});

test("the step-only rounds' time splits off the model's step: the rest is the host's", async () => {
  const engine = await startNullEngine({}, { stepMilliseconds: 3 });
  await runToEnd(engine, job('a'.repeat(20)));
  const time = engine.stats.roundTime!;
  assert.ok(time.stepRounds >= 5);
  assert.ok(time.stepCallMs >= 3 * time.stepRounds, `${time.stepCallMs} ms in ${time.stepRounds} steps of 3 ms`);
  assert.ok(time.stepCallMs <= time.stepRoundMs);
  assert.ok(time.longestStepCallMs >= 3);
  await engine.close();
});

test('an explicit max_frames below the natural length clips with finish reason length', async () => {
  const engine = await startNullEngine();
  const outcome = await runToEnd(engine, job('a'.repeat(80), { maxFrames: 10 }));
  assert.equal(outcome.last.type === 'finished' && outcome.last.reason, 'length');
  assert.equal(outcome.pcm.length, 10 * 2048);
  assert.deepEqual(outcome.groups, [1, 4, 5]);
  await engine.close();
});

test('admission refuses budgets that do not fit the context, naming the numbers', async () => {
  const engine = await startNullEngine({ maxFrames: 100 }, { contextRows: 64 });
  const overflow = await runToEnd(engine, job('abcd', { maxFrames: 60 }));
  assert.equal(overflow.last.type, 'failed');
  if (overflow.last.type === 'failed') {
    assert.equal(overflow.last.error.code, 'CONTEXT_OVERFLOW');
    assert.match(overflow.last.error.message, /12 \+ max_frames 60 \+ 1 = 73 exceeds the context window of 64/);
  }
  assert.equal(overflow.events.length, 1, 'refused before any audio');
  const tooLong = await runToEnd(engine, job('x'.repeat(60)));
  assert.equal(tooLong.last.type === 'failed' && tooLong.last.error.code, 'CONTEXT_OVERFLOW');
  const structural = await runToEnd(engine, job('hi <|im_end|>'));
  assert.equal(structural.last.type === 'failed' && structural.last.error.code, 'TEXT_STRUCTURAL_TOKEN');
  await engine.close();
});

test('same request and seed give identical audio; another seed gives other audio', async () => {
  const engine = await startNullEngine();
  const first = await runToEnd(engine, job('hello there'));
  const second = await runToEnd(engine, job('hello there'));
  const reseeded = await runToEnd(engine, job('hello there', { sampling: { ...job('').sampling, seed: 8 } }));
  assert.deepEqual(first.pcm, second.pcm);
  assert.notDeepEqual(first.pcm, reseeded.pcm);
  await engine.close();
});

test('requests served concurrently on 4 lanes equal the same requests served alone', async () => {
  const texts = ['one fish', 'two fish, red fish', 'blue fish '.repeat(5), 'x'];
  const engine = await startNullEngine({ lanes: 4, prefillChunk: 3 });
  const alone: Outcome[] = [];
  for (const text of texts) alone.push(await runToEnd(engine, job(text)));
  let busiest = 0;
  engine.on('stats', (stats) => {
    busiest = Math.max(busiest, stats.lanesBusy);
  });
  const together = await Promise.all(texts.map((text) => runToEnd(engine, job(text))));
  assert.equal(busiest, 4);
  for (const [index, outcome] of together.entries()) assert.deepEqual(outcome.pcm, alone[index]!.pcm);
  await engine.close();
});

test('long text is spoken piece by piece as one stream', async () => {
  const engine = await startNullEngine();
  const text = 'word '.repeat(40).trim();
  const whole = await runToEnd(engine, job(text, { pieceLength: 1000 }));
  const pieces = await runToEnd(engine, job(text, { pieceLength: 50 }));
  assert.equal(whole.events[0]!.type === 'admitted' && whole.events[0]!.admission.pieces, 1);
  assert.equal(pieces.events[0]!.type === 'admitted' && pieces.events[0]!.admission.pieces, 4);
  // 4 pieces of ≤ 50 code points (+ 8 header rows each) speak (rows × 0.5) frames each.
  const expected = [50, 50, 50, 49].reduce((sum, points) => sum + Math.round((points + 8) * 0.5), 0);
  assert.equal(pieces.last.type === 'finished' && pieces.last.usage.outputFrames, expected);
  await engine.close();
});

test('a cancelled request is settled at the next round, its lane released, the others untouched', async () => {
  const engine = await startNullEngine({ lanes: 2 }, { framesPerRow: 100 });
  const survivor = submit(engine, job('short', { maxFrames: 30 }));
  let cancelRound = -1;
  const cancelled = submit(engine, job('long long text'), (event) => {
    if (event.type === 'audio' && cancelRound < 0) {
      cancelRound = engine.stats.rounds;
      cancelled.handle.cancel();
    }
  });
  const outcome = await cancelled.done;
  assert.equal(outcome.last.type, 'cancelled');
  if (outcome.last.type === 'cancelled') assert.ok(outcome.last.round <= cancelRound + 1, 'settled within one round');
  const frames = outcome.groups.reduce((sum, count) => sum + count, 0);
  assert.ok(frames <= 5, `generated ${frames} frames after asking to cancel at the first`);
  const other = await survivor.done;
  assert.equal(other.last.type === 'finished' && other.last.usage.outputFrames, 30);
  assert.equal(engine.stats.lanesBusy, 0);
  assert.equal(engine.requestsInFlight, 0);
  await engine.close();
});

test('beyond lanes + queue the engine refuses with ENGINE_OVERLOADED', async () => {
  const engine = await startNullEngine({ lanes: 1 }, {}, 'inline', 1);
  const first = runToEnd(engine, job('a'));
  const second = runToEnd(engine, job('b'));
  assert.throws(() => engine.submit(job('c'), () => {}), { code: 'ENGINE_OVERLOADED', kind: 'overloaded' });
  await Promise.all([first, second]);
  assert.equal((await runToEnd(engine, job('d'))).last.type, 'finished');
  await engine.close();
});

test('the worker-thread engine gives the same audio as the in-thread one', async () => {
  const inline = await startNullEngine();
  const worker = await startNullEngine({}, {}, 'worker');
  assert.equal(worker.info.synthetic, true);
  const expected = await runToEnd(inline, job('across threads'));
  const actual = await runToEnd(worker, job('across threads'));
  assert.deepEqual(actual.pcm, expected.pcm);
  assert.deepEqual(actual.groups, expected.groups);
  await Promise.all([inline.close(), worker.close()]);
});

test('without max_frames a voice that never ends stops at the text ceiling with finish reason length', async () => {
  const engine = await startNullEngine({}, { framesPerRow: 1000 });
  const outcome = await runToEnd(engine, job('abc'));
  // 3 input tokens: 64 + 32 × 3 = 160 frames.
  assert.equal(outcome.last.type === 'finished' && outcome.last.reason, 'length');
  assert.equal(outcome.last.type === 'finished' && outcome.last.usage.outputFrames, 160);
  await engine.close();
});

test('a dead engine thread fails its requests, is started again, and after too many deaths stays down', async () => {
  const engine = await startNullEngine({}, { exitAtFrame: 3 }, 'worker');
  for (let death = 1; death <= MAX_ENGINE_RESTARTS; death++) {
    const outcome = await runToEnd(engine, job('this request takes the thread down'));
    assert.equal(outcome.last.type === 'failed' && outcome.last.error.code, 'ENGINE_CRASHED');
    assert.throws(() => engine.submit(job('too soon'), () => {}), { code: 'ENGINE_RESTARTING', kind: 'overloaded' });
    while (engine.failure !== undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    const served = await runToEnd(engine, job('short', { maxFrames: 2 }));
    assert.equal(served.last.type, 'finished', `served after restart ${death}`);
  }
  const last = await runToEnd(engine, job('the last straw'));
  assert.equal(last.last.type === 'failed' && last.last.error.code, 'ENGINE_CRASHED');
  assert.throws(() => engine.submit(job('next'), () => {}), { code: 'ENGINE_CRASHED', kind: 'internal' });
  await engine.close();
});

test('the lane memory budget: oversize requests are refused by name, the others wait until their rows fit', async () => {
  // Each 'x'-request needs 9 prompt rows + 20 frames + 1 = 30 rows; 70 rows hold two at once.
  const engine = await startNullEngine({ lanes: 4, memoryRows: 70 }, { framesPerRow: 100 });
  assert.equal(engine.info.memoryRows, 70);
  const refused = await runToEnd(engine, job('x', { maxFrames: 61 }));
  assert.equal(refused.last.type === 'failed' && refused.last.error.code, 'MEMORY_BUDGET_EXCEEDED');
  let busiest = 0;
  engine.on('stats', (stats) => {
    busiest = Math.max(busiest, stats.lanesBusy);
  });
  const outcomes = await Promise.all(
    [1, 2, 3, 4].map((seed) => runToEnd(engine, job('x', { maxFrames: 20, sampling: { ...job('').sampling, seed } }))),
  );
  assert.equal(busiest, 2, 'only two requests fit the budget at once');
  for (const outcome of outcomes) assert.equal(outcome.last.type === 'finished' && outcome.last.usage.outputFrames, 20);
  await engine.close();
});

test('the engine says how long planning its lanes took, with the lanes and rows it planned', async () => {
  const engine = await startNullEngine({ lanes: 3 });
  const planned = engine.info.notices.find((notice) => notice.startsWith('lanes planned:'));
  assert.match(planned ?? '', /^lanes planned: 3 of \d+ rows in \d+\.\d s$/);
  await engine.close();
});
