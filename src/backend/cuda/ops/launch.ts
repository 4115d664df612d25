// What every op launcher shares: the kernel it runs (overridable by a kernel with the same signature, which the
// kernel contract's deliberately wrong controls use), argument checks that name the bad value, and the launch.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { Handle, LaunchAttributes, LaunchShape } from '../driver.ts';
import type { KernelArguments } from '../kernelArguments.ts';

/** A `__global__` function: the kernels/ file (module) it lives in and its name. */
export interface KernelName {
  readonly family: string;
  readonly name: string;
}

export interface LaunchOptions {
  /** Defaults to the context's stream. */
  readonly stream?: Handle;
  /** Another kernel with the same signature. */
  readonly kernel?: KernelName;
  /**
   * Programmatic dependent launch (default: the process's setting, on unless turned off): the kernel's blocks may start
   * while the previous kernel finishes, each waiting in KERNEL_PROLOGUE (kernels/cuda/common.cuh) before it reads.
   */
  readonly dependentLaunch?: boolean;
}

let dependentLaunchDefault = true;
const DEPENDENT: LaunchAttributes = { programmaticStreamSerialization: true };

/** Turns programmatic dependent launch on or off for every later launch that does not say (benchmarks compare both). */
export function setDependentLaunch(enabled: boolean): void {
  dependentLaunchDefault = enabled;
}

/** Sees every launch made through `launch` (the kernel contract checks argument layouts with it); null: none. */
export type LaunchObserver = (kernel: KernelName, handle: Handle, args: KernelArguments, shape: LaunchShape) => void;

let observer: LaunchObserver | null = null;

/** Whether a launch observer is installed (a profile wants each launch, not a graph's replay). */
export function launchesObserved(): boolean {
  return observer !== null;
}

/** Installs (or with null removes) the one launch observer; returns the one it replaces. */
export function observeLaunches(next: LaunchObserver | null): LaunchObserver | null {
  const previous = observer;
  observer = next;
  return previous;
}

export function launch(
  cuda: CudaContext,
  kernel: KernelName,
  shape: LaunchShape,
  args: KernelArguments,
  options: LaunchOptions,
): void {
  const chosen = options.kernel ?? kernel;
  const handle = cuda.kernels.kernel(chosen.family, chosen.name);
  const stream = options.stream ?? cuda.stream;
  observer?.(chosen, handle, args, shape);
  const dependent = options.dependentLaunch ?? dependentLaunchDefault;
  if (shape.cluster !== undefined) {
    const attributes = { clusterDimensions: shape.cluster, programmaticStreamSerialization: dependent };
    cuda.driver.launchEx(handle, shape, stream, args.parameters, attributes, chosen.name);
  } else if (dependent) {
    cuda.driver.launchEx(handle, shape, stream, args.parameters, DEPENDENT, chosen.name);
  } else cuda.driver.launch(handle, shape, stream, args.parameters, chosen.name);
}

/** Refuses a size that is not an integer within [minimum, maximum]. */
export function requireCount(value: number, name: string, minimum = 1, maximum = 2 ** 31 - 1): void {
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `${name} must be an integer in [${minimum}, ${maximum}], got ${value}`,
      {
        kind: 'internal',
        param: name,
      },
    );
  }
}

export function roundUpToWarp(threads: number, maximum = 1024): number {
  return Math.min(maximum, Math.max(32, Math.ceil(threads / 32) * 32));
}
