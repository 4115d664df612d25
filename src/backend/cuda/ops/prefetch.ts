// Launcher for kernels/cuda/prefetch.cu: weights asked into L2 ahead of the kernel that reads them. It computes
// nothing, so it has no cpu reference: what holds it is that every output keeps its bits with it on or off.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const PREFETCH_L2: KernelName = { family: 'prefetch', name: 'prefetch_l2' };
/** Bytes one bulk prefetch asks for. */
export const PREFETCH_PIECE_BYTES = 32 * 1024;
/** Blocks of one warp: enough SMs' copy engines to issue the pieces at the memory's rate. */
const MOST_BLOCKS = 64;
const ALIGNMENT = 16n;

export function prefetchL2(
  cuda: CudaContext,
  a: { readonly pointer: DevicePointer; readonly bytes: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.bytes, 'bytes', 16, Number.MAX_SAFE_INTEGER);
  if (a.pointer % ALIGNMENT !== 0n) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', 'a prefetched range must start 16-byte aligned', {
      kind: 'internal',
      param: 'pointer',
    });
  }
  const pieces = Math.ceil(a.bytes / PREFETCH_PIECE_BYTES);
  const blocks = Math.min(MOST_BLOCKS, Math.ceil(pieces / 32));
  const args = new KernelArguments().pointer(a.pointer).int64(a.bytes).int32(PREFETCH_PIECE_BYTES);
  launch(cuda, PREFETCH_L2, { grid: [blocks, 1, 1], block: [32, 1, 1] }, args, options);
}
