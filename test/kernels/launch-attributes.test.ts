// ops/launch.ts without a GPU: a launch shape with thread-block cluster dimensions goes through cuLaunchKernelEx with
// the cluster attribute, and with programmatic dependent launch as any other launch has it (on unless turned off).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { LaunchAttributes, LaunchShape } from '../../src/backend/cuda/driver.ts';
import { KernelArguments } from '../../src/backend/cuda/kernelArguments.ts';
import { launch } from '../../src/backend/cuda/ops/launch.ts';

interface Recorded {
  readonly via: 'launch' | 'launchEx';
  readonly shape: LaunchShape;
  readonly attributes?: LaunchAttributes;
}

function recordingContext(): { cuda: CudaContext; recorded: Recorded[] } {
  const recorded: Recorded[] = [];
  const cuda = {
    stream: 1n,
    kernels: { kernel: () => 2n },
    driver: {
      launch: (_kernel: unknown, shape: LaunchShape) => recorded.push({ via: 'launch', shape }),
      launchEx: (_kernel: unknown, shape: LaunchShape, _stream: unknown, _p: unknown, attributes: LaunchAttributes) =>
        recorded.push({ via: 'launchEx', shape, attributes }),
    },
  } as unknown as CudaContext;
  return { cuda, recorded };
}

const kernel = { family: 'f', name: 'k' };
const args = new KernelArguments().int32(1);

test('a cluster launch carries its dimensions, with programmatic dependent launch as asked', () => {
  const { cuda, recorded } = recordingContext();
  const shape = { grid: [4, 32, 3], block: [128, 1, 1], cluster: [4, 1, 1] } as const;
  launch(cuda, kernel, shape, args, {});
  launch(cuda, kernel, shape, args, { dependentLaunch: false });
  launch(cuda, kernel, { grid: [4, 1, 1], block: [32, 1, 1] }, args, { dependentLaunch: false });
  assert.deepEqual(
    recorded.map(({ via, attributes }) => [via, attributes]),
    [
      ['launchEx', { clusterDimensions: [4, 1, 1], programmaticStreamSerialization: true }],
      ['launchEx', { clusterDimensions: [4, 1, 1], programmaticStreamSerialization: false }],
      ['launch', undefined],
    ],
  );
});
