// Placeholder with the fixed signature of the cuda swiglu block, so that the backend compiles before the block module
// lands; it refuses by name.
import { DramaError } from '../../errors.ts';
import type { SwiGluWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { CudaBuffer } from './tensors.ts';

export function runSwiGlu(
  _ctx: BlockContext,
  _weights: SwiGluWeights<CudaBuffer>,
  _x: CudaBuffer,
  _out: CudaBuffer,
  _rows: number,
): void {
  throw new DramaError('CUDA_BLOCK_MISSING', 'the cuda swiglu block is not built in', { kind: 'internal' });
}
