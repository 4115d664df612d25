// The scheduler prefills every lane that is reading its prompt in one joint prefill per round (the model packs the
// pieces into as few calls as its chunk allows), each lane still one chunk a round, and the audio is the audio of the
// same requests served one by one. A failure in the joint prefill fails the requests it held and no others.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NullCodec } from '../../src/engine/null-codec.ts';
import { NullSpeechModel } from '../../src/engine/null-model.ts';
import { NullTextFrontEnd } from '../../src/engine/null-text.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import { snapshotRow } from '../../src/engine/reference-cache.ts';
import type { SpeechRuntime } from '../../src/engine/runtime.ts';
import { Scheduler } from '../../src/engine/scheduler.ts';
import { DramaError } from '../../src/errors.ts';
import { DEFAULT_SAMPLING, type PrefillPart } from '../../src/model/types.ts';

const CHUNK = 8;

/** A null model that records each joint prefill's parts as [from, to) and can be told to fail the next one. */
class RecordingModel extends NullSpeechModel {
  readonly joint: [number, number][][] = [];
  failNext = false;

  override prefillTogether(parts: readonly PrefillPart[]): void {
    this.joint.push(parts.map(({ from, to }) => [from, to]));
    if (this.failNext) {
      this.failNext = false;
      throw new DramaError('PLANTED_PREFILL_FAULT', 'the joint prefill fails', { kind: 'device' });
    }
    super.prefillTogether(parts);
  }
}

function runtime(model: NullSpeechModel): SpeechRuntime {
  return { modelId: 'null', model, codec: new NullCodec(), text: new NullTextFrontEnd() };
}

/** Enqueues every text at once and runs rounds to the end; returns each request's PCM and terminal event type. */
function serve(
  model: RecordingModel,
  texts: readonly string[],
  lanes: number,
  beforeRounds?: () => void,
  firstSeed = 40,
) {
  const events: EngineEvent[] = [];
  const rt = runtime(model);
  const scheduler = new Scheduler(rt, { lanes, prefillChunk: CHUNK }, (event) => events.push(event));
  texts.forEach((text, index) => {
    const prompt = rt.text.prompt({ text, instructions: undefined, references: [], normalize: false });
    scheduler.enqueue({
      id: index + 1,
      pieces: [prompt],
      sampling: { ...DEFAULT_SAMPLING, seed: firstSeed + index },
      admission: { inputTokens: prompt.textTokens, promptRows: prompt.rows.tokens.length, pieces: 1, frameBudget: 12 },
    });
  });
  beforeRounds?.();
  while (scheduler.hasWork()) scheduler.runRound();
  return texts.map((_, index) => {
    const mine = events.filter((event) => 'id' in event && event.id === index + 1);
    const pcm = mine.flatMap((event) => (event.type === 'audio' ? [Buffer.from(event.pcm.buffer)] : []));
    return { pcm: Buffer.concat(pcm), end: mine.at(-1)?.type };
  });
}

const TEXTS = ['a short one', 'a somewhat longer request than that', 'x', 'the third of four, of middling length'];

test('lanes reading their prompts are prefilled in one joint prefill a round, a chunk each', () => {
  const model = new RecordingModel();
  const served = serve(model, TEXTS, 4);
  assert.ok(served.every((reply) => reply.end === 'finished' && reply.pcm.length > 0));
  const first = model.joint[0]!;
  assert.equal(first.length, 4, 'all four lanes in the first round');
  // Every prompt here has the same header prefix, so the same snapshot row: cuts fall at multiples of the chunk from
  // row 0 up to it, then at multiples past it.
  const row = snapshotRow(
    new NullTextFrontEnd().prompt({ text: TEXTS[0]!, instructions: undefined, references: [], normalize: false }).rows,
  );
  assert.ok(row > 0, 'the prompts have a snapshot row');
  for (const call of model.joint) {
    for (const [from, to] of call) {
      assert.ok(to - from <= CHUNK, `a piece of ${to - from} rows exceeds the chunk`);
      const origin = from >= row ? row : 0;
      assert.ok(
        to === row ||
          (to - origin) % CHUNK === 0 ||
          Math.floor((from - origin) / CHUNK) === Math.floor((to - 1 - origin) / CHUNK),
        `[${from}, ${to}) cut at multiples of the chunk from row ${origin}`,
      );
    }
  }
  assert.ok(model.joint.length < TEXTS.length * Math.max(...model.joint.map((call) => call.length)));
});

test('requests prefilled together give the audio each gives served alone', () => {
  const together = serve(new RecordingModel(), TEXTS, 4);
  const alone = TEXTS.map((text, index) => serve(new RecordingModel(), [text], 1, undefined, 40 + index)[0]!);
  together.forEach((reply, index) => {
    assert.ok(reply.pcm.equals(alone[index]!.pcm), `request ${index}`);
  });
});

test('a failed joint prefill fails the requests it held; a request that joins later is served', () => {
  const model = new RecordingModel();
  const served = serve(model, TEXTS.slice(0, 2), 2, () => {
    model.failNext = true;
  });
  assert.deepEqual(
    served.map((reply) => reply.end),
    ['failed', 'failed'],
  );
  assert.equal(model.liveLanes, 0, 'their lanes were released');
  const after = serve(model, TEXTS.slice(2), 2);
  assert.ok(after.every((reply) => reply.end === 'finished' && reply.pcm.length > 0));
});
