// Raising a kernel's dynamic shared-memory limit past the 48 KiB default, once per kernel, context and size: the
// codec launchers (convs and the window attention) call it before they launch.
import type { CudaContext } from '../context.ts';
import type { KernelName, LaunchOptions } from './launch.ts';

/** Per context (whose modules own the handles), kernels whose shared-memory limit has been raised, to the bytes. */
const raisedLimits = new WeakMap<CudaContext, Map<bigint, number>>();
const DEFAULT_SHARED_LIMIT = 48 * 1024;

/**
 * Past 48 KiB a kernel must be allowed its dynamic shared memory first (once per kernel, context and size);
 * `carveout` (percent of L1 as shared memory) for kernels whose blocks only fit the SM two at a time with all of it.
 */
export function allowShared(
  cuda: CudaContext,
  kernel: KernelName,
  options: LaunchOptions,
  bytes: number,
  carveout?: number,
): void {
  const chosen = options.kernel ?? kernel;
  const handle = cuda.kernels.kernel(chosen.family, chosen.name);
  let raised = raisedLimits.get(cuda);
  if (raised === undefined) {
    raised = new Map();
    raisedLimits.set(cuda, raised);
  }
  if ((raised.get(handle) ?? DEFAULT_SHARED_LIMIT) >= bytes) return;
  cuda.driver.setMaxDynamicSharedBytes(handle, bytes);
  if (carveout !== undefined) cuda.driver.setPreferredSharedCarveout(handle, carveout);
  raised.set(handle, bytes);
}
