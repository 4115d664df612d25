// The context's streams without a GPU (src/backend/cuda/streams.ts): alongside() forks the side stream after the
// work queued so far and joins it before what follows, a part that throws still joins (a capture can end), it cannot
// nest, with the side stream off its parts run one after the other on the main stream, and both streams take the
// context's priority. A tail runs on the tail stream after the work queued so far and beside what follows until
// joinTail(); with tails off it runs where it is queued.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Handle } from '../../src/backend/cuda/driver.ts';
import { ContextStreams } from '../../src/backend/cuda/streams.ts';

function recordingDriver(secondStream = 'side', thirdStream = 'below') {
  const calls: string[] = [];
  const priorities: number[] = [];
  const streamNames = new Map<Handle, string>();
  let handles = 0n;
  const name = (handle: Handle) => streamNames.get(handle) ?? `event ${handle}`;
  const driver = {
    createStream: (priority = 0) => {
      priorities.push(priority);
      const handle = ++handles;
      streamNames.set(handle, ['main', secondStream, thirdStream][streamNames.size] ?? `stream ${handle}`);
      return handle;
    },
    createEvent: () => ++handles,
    destroyStream: (stream: Handle) => calls.push(`destroy ${name(stream)}`),
    destroyEvent: (event: Handle) => calls.push(`destroy ${name(event)}`),
    synchronizeStream: (stream: Handle) => calls.push(`synchronize ${name(stream)}`),
    recordEvent: (event: Handle, stream: Handle) => calls.push(`record ${name(event)} on ${name(stream)}`),
    streamWaitEvent: (stream: Handle, event: Handle) => calls.push(`${name(stream)} waits for ${name(event)}`),
  };
  return { driver, calls, name, priorities };
}

test('alongside forks the side stream after the queued work and joins it before what follows', () => {
  const { driver, calls, name } = recordingDriver();
  const streams = new ContextStreams(driver, true);
  const launch = (what: string) => calls.push(`${what} on ${name(streams.current)}`);
  launch('before');
  streams.alongside(
    () => launch('side part'),
    () => launch('main part'),
  );
  launch('after');
  assert.deepEqual(calls, [
    'before on main',
    'record event 3 on main',
    'side waits for event 3',
    'side part on side',
    'record event 4 on side',
    'main part on main',
    'main waits for event 4',
    'after on main',
  ]);
  calls.length = 0;
  streams.synchronize();
  streams.destroy();
  assert.deepEqual(calls, [
    'synchronize main',
    'synchronize side',
    'synchronize main',
    'synchronize side',
    'destroy event 3',
    'destroy event 4',
    'destroy side',
    'destroy main',
  ]);
});

test('a part that throws still joins the side stream, and the main stream is current again', () => {
  for (const failing of ['side', 'main'] as const) {
    const { driver, calls } = recordingDriver();
    const streams = new ContextStreams(driver, true);
    const fail = () => {
      throw new Error(`${failing} failed`);
    };
    assert.throws(
      () => streams.alongside(failing === 'side' ? fail : () => {}, failing === 'main' ? fail : () => {}),
      new RegExp(`${failing} failed`),
    );
    assert.equal(streams.current, streams.main);
    assert.deepEqual(calls.slice(-2), ['record event 4 on side', 'main waits for event 4']);
  }
});

test('alongside cannot nest, and with the side stream off its parts run in order on the main stream', () => {
  const { driver } = recordingDriver();
  const streams = new ContextStreams(driver, true);
  assert.throws(
    () =>
      streams.alongside(
        () =>
          streams.alongside(
            () => {},
            () => {},
          ),
        () => {},
      ),
    /main stream only/,
  );
  const off = recordingDriver();
  const sequential = new ContextStreams(off.driver, false);
  sequential.alongside(
    () => off.calls.push(`side part on ${off.name(sequential.current)}`),
    () => off.calls.push(`main part on ${off.name(sequential.current)}`),
  );
  assert.deepEqual(off.calls, ['side part on main', 'main part on main']);
});

test('the streams are created at the context priority, the default 0 unless one is given, a tail below at its own', () => {
  for (const priority of [0, -5]) {
    const { driver, priorities } = recordingDriver();
    const streams = new ContextStreams(driver, true, priority, true);
    streams.alongside(
      () => {},
      () => {},
    );
    streams.tail(() => {});
    assert.deepEqual(priorities, [priority, priority, priority]);
  }
  const { driver, priorities } = recordingDriver();
  const streams = new ContextStreams(driver, true, -5, true, -4);
  streams.tail(() => {}, true);
  streams.alongside(
    () => {},
    () => {},
  );
  streams.tail(() => {});
  streams.tail(() => {}, true);
  assert.deepEqual(priorities, [-5, -4, -5, -5]);
  // With no priority below the context's, a tail asked to run below runs on the one tail stream.
  const least = recordingDriver();
  const atLeast = new ContextStreams(least.driver, true, 0, true, 0);
  atLeast.tail(() => {}, true);
  atLeast.tail(() => {});
  assert.deepEqual(least.priorities, [0, 0]);
});

test('tails on the two tail streams wait for the tail before them until the main stream has joined it', () => {
  // Streams are named in the order they are made: the tail below first here.
  const { driver, calls, name } = recordingDriver('below', 'level');
  const streams = new ContextStreams(driver, true, -5, true, -4);
  const launch = (what: string) => calls.push(`${what} on ${name(streams.current)}`);
  streams.tail(() => launch('tail 1'), true);
  streams.tail(() => launch('tail 2'));
  streams.tail(() => launch('tail 3'), true);
  streams.joinTail();
  streams.tail(() => launch('tail 4'));
  streams.joinTail();
  // Handles: main 1; below 2 (events 3, 4); level 5 (events 6, 7).
  assert.deepEqual(calls, [
    'record event 3 on main',
    'below waits for event 3',
    'tail 1 on below',
    'record event 4 on below',
    'record event 6 on main',
    'level waits for event 6',
    'level waits for event 4',
    'tail 2 on level',
    'record event 7 on level',
    'record event 3 on main',
    'below waits for event 3',
    'below waits for event 7',
    'tail 3 on below',
    'record event 4 on below',
    'main waits for event 4',
    'record event 6 on main',
    'level waits for event 6',
    'tail 4 on level',
    'record event 7 on level',
    'main waits for event 7',
  ]);
  calls.length = 0;
  streams.synchronize();
  assert.deepEqual(calls, ['synchronize main', 'synchronize level', 'synchronize below']);
});

test('a tail runs on the tail stream after the queued work, beside what follows until joinTail', () => {
  const { driver, calls, name } = recordingDriver('tail');
  const streams = new ContextStreams(driver, true, 0, true);
  const launch = (what: string) => calls.push(`${what} on ${name(streams.current)}`);
  streams.joinTail();
  launch('head 1');
  streams.tail(() => launch('tail 1'));
  launch('head 2');
  streams.joinTail();
  streams.joinTail();
  launch('handoff 2');
  streams.tail(() => launch('tail 2'));
  assert.deepEqual(calls, [
    'head 1 on main',
    'record event 3 on main',
    'tail waits for event 3',
    'tail 1 on tail',
    'record event 4 on tail',
    'head 2 on main',
    'main waits for event 4',
    'handoff 2 on main',
    'record event 3 on main',
    'tail waits for event 3',
    'tail 2 on tail',
    'record event 4 on tail',
  ]);
  calls.length = 0;
  streams.synchronize();
  assert.deepEqual(calls, ['synchronize main', 'synchronize tail']);
});

test('a tail that throws still ends on the tail stream; tails cannot start from another stream; off runs in place', () => {
  const { driver, calls } = recordingDriver('tail');
  const streams = new ContextStreams(driver, true, 0, true);
  assert.throws(
    () =>
      streams.tail(() => {
        throw new Error('tail failed');
      }),
    /tail failed/,
  );
  assert.equal(streams.current, streams.main);
  assert.deepEqual(calls.slice(-1), ['record event 4 on tail']);
  streams.joinTail();
  assert.deepEqual(calls.slice(-1), ['main waits for event 4']);
  assert.throws(() => streams.tail(() => streams.tail(() => {})), /main stream only/);
  assert.throws(
    () =>
      streams.alongside(
        () => streams.tail(() => {}),
        () => {},
      ),
    /main stream only/,
  );
  const off = recordingDriver('tail');
  const inPlace = new ContextStreams(off.driver, true, 0, false);
  inPlace.tail(() => off.calls.push(`tail on ${off.name(inPlace.current)}`));
  inPlace.joinTail();
  assert.deepEqual(off.calls, ['tail on main']);
});
