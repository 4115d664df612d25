// The decode thread's frame gather: off, every pass decodes what it got; on, a request's first frames go at once,
// later frames wait until some lane has gathered `frames`, and then every held lane goes in the same pass; nothing is
// held below `minLanes` requests; takeAll and forget leave nothing behind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrameGather, type FrameGroup, NO_FRAME_GATHER } from '../../src/engine/frame-gather.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';

let next = 0;
function frame(): Int32Array {
  next += 1;
  return new Int32Array(CODES_PER_FRAME).fill(next);
}

/** One round: a frame for each of the ids. */
function round(ids: readonly number[]): FrameGroup[] {
  return ids.map((id) => ({ id, frames: [frame()] }));
}

/** Ids and frame counts of a pass, to compare. */
function shape(groups: readonly FrameGroup[]): [number, number][] {
  return groups.map(({ id, frames }) => [id, frames.length]);
}

test('off, every pass decodes what it got', () => {
  const gather = new FrameGather(NO_FRAME_GATHER);
  for (let index = 0; index < 3; index++)
    assert.deepEqual(shape(gather.take(round([1, 2, 3]))), [
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
});

test('on, first frames go at once, later ones wait for the pass that decodes every lane, in order', () => {
  const gather = new FrameGather({ frames: 3, minLanes: 2 });
  const ids = [1, 2, 3];
  assert.equal(gather.take(round(ids)).length, 3, 'first frames: first audio is not held');
  const second = round(ids);
  assert.deepEqual(gather.take(second), []);
  const third = round(ids);
  assert.deepEqual(gather.take(third), []);
  const fourth = round(ids);
  const pass = gather.take(fourth);
  assert.deepEqual(shape(pass), [
    [1, 3],
    [2, 3],
    [3, 3],
  ]);
  assert.deepEqual(pass[1]!.frames, [second[1]!.frames[0], third[1]!.frames[0], fourth[1]!.frames[0]], 'in order');
});

test('below minLanes nothing is held; forget drops a request and its next frames count as first again', () => {
  const gather = new FrameGather({ frames: 4, minLanes: 3 });
  gather.take(round([1, 2]));
  assert.equal(gather.take(round([1, 2])).length, 2);
  const wide = new FrameGather({ frames: 4, minLanes: 1 });
  wide.take(round([1, 2]));
  wide.take(round([1, 2]));
  wide.forget(2);
  assert.deepEqual(shape(wide.takeAll()), [[1, 1]], "a forgotten request's held frames are gone");
  assert.deepEqual(shape(wide.take(round([2]))), [[2, 1]], 'first frames again');
});
