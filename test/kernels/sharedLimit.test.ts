// A codec kernel's dynamic shared-memory limit is raised only past 48 KiB, again only when a launch asks for more,
// and per CUDA context: a new context's kernels (whose handles may repeat an old one's) are raised again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { allowShared } from '../../src/backend/cuda/ops/sharedLimit.ts';

/** A context whose kernels are numbered from 1 in the order asked for, recording the limits set. */
function recordingContext(calls: string[]) {
  let next = 1n;
  const handles = new Map<string, bigint>();
  return {
    kernels: {
      kernel: (family: string, name: string) => {
        const key = `${family}/${name}`;
        if (!handles.has(key)) handles.set(key, next++);
        return handles.get(key)!;
      },
    },
    driver: {
      setMaxDynamicSharedBytes: (handle: bigint, bytes: number) => calls.push(`limit ${handle} ${bytes}`),
    },
  } as unknown as CudaContext;
}

const CONV = { family: 'codec_conv', name: 'codec_conv_mma_f16' };

test('the limit is raised past 48 KiB, and again only for more', () => {
  const calls: string[] = [];
  const cuda = recordingContext(calls);
  allowShared(cuda, CONV, {}, 40000);
  allowShared(cuda, CONV, {}, 80000);
  allowShared(cuda, CONV, {}, 60000);
  allowShared(cuda, CONV, {}, 90000);
  assert.deepEqual(calls, ['limit 1 80000', 'limit 1 90000']);
});

test('a new context raises its kernels again, though their handles repeat the old one', () => {
  const calls: string[] = [];
  allowShared(recordingContext(calls), CONV, {}, 80000);
  allowShared(recordingContext(calls), CONV, {}, 80000);
  assert.deepEqual(calls, ['limit 1 80000', 'limit 1 80000']);
});

test('a control kernel in the options is the one raised', () => {
  const calls: string[] = [];
  const cuda = recordingContext(calls);
  allowShared(cuda, { family: 'codec_controls', name: 'control_codec_conv_mma_taps_reversed' }, {}, 1);
  allowShared(cuda, CONV, { kernel: { family: 'codec_controls', name: 'control' } }, 80000);
  assert.deepEqual(calls, ['limit 2 80000']);
});
