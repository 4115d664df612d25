// A codec kernel is prepared for its shared memory once: the whole L1/shared storage asked for as shared memory (so
// the blocks its shared bytes allow all fit on an SM), and the dynamic limit raised only past 48 KiB, again only when
// a launch asks for more than was allowed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { allowShared } from '../../src/backend/cuda/ops/codecConvArguments.ts';

function recordingContext() {
  const calls: string[] = [];
  let next = 1n;
  const handles = new Map<string, bigint>();
  const cuda = {
    kernels: {
      kernel: (family: string, name: string) => {
        const key = `${family}/${name}`;
        if (!handles.has(key)) handles.set(key, next++);
        return handles.get(key)!;
      },
    },
    driver: {
      setPreferredSharedCarveout: (handle: bigint, percent: number) => calls.push(`carveout ${handle} ${percent}`),
      setMaxDynamicSharedBytes: (handle: bigint, bytes: number) => calls.push(`limit ${handle} ${bytes}`),
    },
  } as unknown as CudaContext;
  return { cuda, calls };
}

test('the carveout is asked for once per kernel; the limit is raised past 48 KiB, and again only for more', () => {
  const { cuda, calls } = recordingContext();
  const attention = { family: 'codec_transformer', name: 'codec_window_attention' };
  const conv = { family: 'codec_conv', name: 'codec_conv_mma_f16' };
  allowShared(cuda, attention, {}, 37632);
  allowShared(cuda, attention, {}, 37632);
  allowShared(cuda, conv, {}, 80000);
  allowShared(cuda, conv, {}, 60000);
  allowShared(cuda, conv, {}, 90000);
  assert.deepEqual(calls, ['carveout 1 100', 'carveout 2 100', 'limit 2 80000', 'limit 2 90000']);
});

test('a control kernel in the options is the one prepared', () => {
  const { cuda, calls } = recordingContext();
  const control = { family: 'codec_controls', name: 'control_codec_window_attention_keys_reversed' };
  allowShared(cuda, { family: 'codec_transformer', name: 'codec_window_attention' }, { kernel: control }, 1024);
  assert.deepEqual(calls, ['carveout 1 100']);
});
