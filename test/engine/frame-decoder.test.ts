// Frame decoders: the threaded one gives the inline one's audio in the same order, terminal event last, on the port
// it was handed (the main thread's), not through the engine thread; a codec failure turns the request's end into a
// named failure and leaves other requests alone; a decode thread that dies fails its open requests by name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MessageChannel, type Worker } from 'node:worker_threads';
import { InlineFrameDecoder } from '../../src/engine/frame-decoder.ts';
import { NullCodec } from '../../src/engine/null-codec.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import { ThreadFrameDecoder } from '../../src/engine/thread-decoder.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';

const frames = Array.from({ length: 13 }, (_, index) =>
  Int32Array.from({ length: CODES_PER_FRAME }, (_, k) => (index * 31 + k * 7) % 1024),
);
const groups = [frames.slice(0, 1), frames.slice(1, 5), frames.slice(5, 13)];
const finished = { type: 'finished', id: 1, reason: 'stop', usage: { inputTokens: 2, outputFrames: 13 } } as const;

test('the decode thread sends the inline decoder audio to its port, in order, with the finished event last', async () => {
  const inline: EngineEvent[] = [];
  const local = new InlineFrameDecoder(new NullCodec(), (event) => inline.push(event));
  local.open(1);
  for (const group of groups) local.decode(1, group);
  local.end(finished);

  const threaded: EngineEvent[] = [];
  const relayed: EngineEvent[] = [];
  const audio = new MessageChannel();
  const done = new Promise<void>((resolve) => {
    audio.port1.on('message', (event: EngineEvent) => {
      threaded.push(event);
      if (event.type === 'finished') resolve();
    });
  });
  const decoder = await ThreadFrameDecoder.start(
    { kind: 'null' },
    audio.port2,
    (event) => relayed.push(event),
    () => {},
  );
  decoder.open(1);
  for (const group of groups) decoder.decode(1, group);
  decoder.end(finished);
  await done;
  await decoder.close();
  audio.port1.close();
  assert.deepEqual(
    threaded.map((event) => event.type),
    ['audio', 'audio', 'audio', 'finished'],
  );
  assert.deepEqual(threaded, inline);
  assert.deepEqual(relayed, [], 'nothing decoded passes through the engine thread');
});

test('a decode thread that dies fails its open requests by name on the engine thread, and later ends too', async () => {
  const relayed: EngineEvent[] = [];
  const audio = new MessageChannel();
  const died = new Promise<string>((resolve) => {
    void ThreadFrameDecoder.start({ kind: 'null' }, audio.port2, (event) => relayed.push(event), resolve).then(
      (decoder) => {
        decoder.open(1);
        decoder.open(2);
        decoder.end({ ...finished, id: 2 });
        // The thread ends once request 2 has settled with the engine thread (its terminal event went to the main
        // thread first); request 1 is still open then.
        const inside = decoder as unknown as { worker: Worker; openIds: Set<number> };
        const endWhenSettled = () => {
          if (inside.openIds.has(2)) setTimeout(endWhenSettled, 5);
          else void inside.worker.terminate();
        };
        audio.port1.on('message', (event: EngineEvent) => {
          if (event.type === 'finished') endWhenSettled();
        });
      },
    );
  });
  const reason = await died;
  audio.port1.close();
  assert.match(reason, /the decode thread exited with code/);
  assert.deepEqual(
    relayed.map((event) => `${event.type}:${'id' in event ? event.id : ''}`),
    ['failed:1'],
  );
});

test('a codec failure ends that request as failed, by name; another request is unaffected', () => {
  const events: EngineEvent[] = [];
  let pushes = 0;
  const codec = new NullCodec();
  const fragile = {
    sampleRate: codec.sampleRate,
    frameLength: codec.frameLength,
    openStream() {
      const stream = codec.openStream();
      return {
        push(batch: readonly Int32Array[]) {
          pushes += 1;
          if (pushes === 2) throw new Error('decoder blew up');
          return stream.push(batch);
        },
      };
    },
  };
  const decoder = new InlineFrameDecoder(fragile, (event) => events.push(event));
  decoder.open(1);
  decoder.open(2);
  decoder.decode(1, groups[0]!);
  decoder.decode(1, groups[1]!);
  decoder.decode(1, groups[2]!);
  decoder.decode(2, groups[0]!);
  decoder.end(finished);
  decoder.end({ ...finished, id: 2 });
  assert.deepEqual(
    events.map((event) => `${event.type}:${'id' in event ? event.id : ''}`),
    ['audio:1', 'audio:2', 'failed:1', 'finished:2'],
  );
  const failure = events[2]!;
  assert.ok(
    failure.type === 'failed' && failure.error.code === 'ENGINE_FAILURE' && /blew up/.test(failure.error.message),
  );
});

/** A NullCodec that decodes several streams in one pass, recording each pass, refusing frames whose code 0 is 999. */
function passCodec() {
  const codec = new NullCodec();
  const passes: number[][] = [];
  const closed: number[] = [];
  const owners = new Map<unknown, number>();
  let opened = 0;
  return {
    passes,
    closed,
    codec: {
      sampleRate: codec.sampleRate,
      frameLength: codec.frameLength,
      openStream() {
        const number = opened++;
        const stream = { ...codec.openStream(), close: () => closed.push(number) };
        owners.set(stream, number);
        return stream;
      },
      decodeTogether(
        pushes: readonly { stream: { push(f: readonly Int32Array[]): Float32Array }; frames: readonly Int32Array[] }[],
      ) {
        passes.push(pushes.map(({ stream }) => owners.get(stream)!));
        return pushes.map(({ stream, frames: batch }) =>
          batch.some((frame) => frame[0] === 999) ? new Error('refused') : stream.push(batch),
        );
      },
    },
  };
}

test('groups decoded together: one pass per round of distinct requests, same audio, a refusal fails only its request', () => {
  const { codec, passes, closed } = passCodec();
  const events: EngineEvent[] = [];
  const decoder = new InlineFrameDecoder(codec, (event) => events.push(event));
  const alone: EngineEvent[] = [];
  const reference = new InlineFrameDecoder(new NullCodec(), (event) => alone.push(event));
  for (const id of [1, 2, 3]) {
    decoder.open(id);
    reference.open(id);
  }
  const bad = [Int32Array.from({ length: CODES_PER_FRAME }, () => 999)];
  decoder.decodeMany([
    { id: 1, frames: groups[0]! },
    { id: 2, frames: groups[1]! },
    { id: 1, frames: groups[1]! },
    { id: 3, frames: bad },
  ]);
  // Request 1's second group waits for a second pass; request 3 is refused alone.
  assert.deepEqual(passes, [[0, 1, 2], [0]]);
  reference.decode(1, groups[0]!);
  reference.decode(2, groups[1]!);
  reference.decode(1, groups[1]!);
  const audio = (list: EngineEvent[]) => list.filter((event) => event.type === 'audio');
  assert.deepEqual(
    audio(events).map((event) => [event.id, event.frames]),
    [
      [1, 1],
      [2, 4],
      [1, 4],
    ],
  );
  assert.deepEqual(
    audio(events).map((event) => (event.type === 'audio' ? event.pcm : [])),
    audio(alone).map((event) => (event.type === 'audio' ? event.pcm : [])),
  );
  assert.deepEqual(closed, [2], 'the refused stream gave its lane back');
  decoder.end({ ...finished, id: 3 });
  assert.equal(events.at(-1)?.type, 'failed');
  decoder.end({ ...finished, id: 1 });
  decoder.drop(2);
  assert.deepEqual(closed, [2, 0, 1]);
});
