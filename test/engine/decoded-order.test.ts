// The host's two ports: the engine thread's events and the decode thread's audio and terminal events arrive on
// different ports, so a request's audio may overtake its 'admitted'. The engine holds such audio until then, and
// passes each request's events on as admitted, audio in order, terminal event last; events of requests it does not
// know are dropped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import type { EngineCommand, EngineEvent, EngineInfo } from '../../src/engine/protocol.ts';
import { job } from './support.ts';

interface Ports {
  receive(event: EngineEvent): void;
  receiveDecoded(event: EngineEvent): void;
}

/** An engine whose link records commands, fed events by hand as its two ports would. */
function engineOnPorts(): { engine: Engine; ports: Ports; commands: EngineCommand[] } {
  const commands: EngineCommand[] = [];
  const link = { send: (command: EngineCommand) => commands.push(command), stop: async () => {} };
  const info = { lanes: 2 } as EngineInfo;
  const construct = Engine as unknown as new (info: EngineInfo, queueLimit: number, link: unknown) => Engine;
  const engine = new construct(info, 4, link);
  return { engine, ports: engine as unknown as Ports, commands };
}

const admission = { inputTokens: 3, promptRows: 9, pieces: 1, frameBudget: 8 };
const audio = (id: number, frames: number): EngineEvent => ({
  type: 'audio',
  id,
  pcm: new Float32Array(frames),
  frames,
  codes: new Int32Array(frames * 10),
});
const finished = (id: number): EngineEvent => ({
  type: 'finished',
  id,
  reason: 'stop',
  usage: { inputTokens: 3, outputFrames: 5 },
});

test("audio that overtakes its request's admission is held until it, then passed on in order", () => {
  const { engine, ports } = engineOnPorts();
  const seen: string[] = [];
  const handle = engine.submit(job('hello'), (event) =>
    seen.push(event.type === 'audio' ? `audio ${event.frames}` : event.type),
  );
  ports.receiveDecoded(audio(handle.id, 1));
  ports.receiveDecoded(audio(handle.id, 4));
  ports.receiveDecoded(finished(handle.id));
  assert.deepEqual(seen, [], 'nothing before admission');
  ports.receive({ type: 'admitted', id: handle.id, admission });
  assert.deepEqual(seen, ['admitted', 'audio 1', 'audio 4', 'finished']);
  assert.equal(engine.requestsInFlight, 0);
});

test('after admission decoded events pass straight on; a failure before admission drops what was held', () => {
  const { engine, ports } = engineOnPorts();
  const first: string[] = [];
  const second: string[] = [];
  const a = engine.submit(job('one'), (event) => first.push(event.type));
  const b = engine.submit(job('two'), (event) => second.push(event.type));
  ports.receive({ type: 'admitted', id: a.id, admission });
  ports.receiveDecoded(audio(a.id, 1));
  ports.receiveDecoded(finished(a.id));
  assert.deepEqual(first, ['admitted', 'audio', 'finished']);
  ports.receiveDecoded(audio(b.id, 1));
  ports.receive({
    type: 'failed',
    id: b.id,
    error: { code: 'X', message: 'refused', kind: 'internal', param: undefined },
  });
  // A late admission of a request already ended changes nothing; nor does audio of an unknown request.
  ports.receive({ type: 'admitted', id: b.id, admission });
  ports.receiveDecoded(audio(99, 1));
  assert.deepEqual(second, ['failed']);
  assert.equal(engine.requestsInFlight, 0);
});
