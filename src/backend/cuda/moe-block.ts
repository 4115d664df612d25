// Placeholder with the fixed signature of the cuda moe block, so that the backend compiles before the block module
// lands; it refuses by name.
import { DramaError } from '../../errors.ts';
import type { MoeWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { CudaBuffer } from './tensors.ts';

export function runMoe(
  _ctx: BlockContext,
  _weights: MoeWeights<CudaBuffer>,
  _x: CudaBuffer,
  _out: CudaBuffer,
  _rows: number,
): void {
  throw new DramaError('CUDA_BLOCK_MISSING', 'the cuda moe block is not built in', { kind: 'internal' });
}
