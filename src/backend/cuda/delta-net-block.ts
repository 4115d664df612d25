// Placeholder with the fixed signature of the cuda delta net block, so that the backend compiles before the block
// module lands; it refuses by name.
import { DramaError } from '../../errors.ts';
import type { CallTables, DeltaNetSlab, DeltaNetWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { CudaBuffer } from './tensors.ts';

export function runDeltaNet(
  _ctx: BlockContext,
  _weights: DeltaNetWeights<CudaBuffer>,
  _x: CudaBuffer,
  _slab: DeltaNetSlab<CudaBuffer>,
  _tables: CallTables<CudaBuffer>,
  _out: CudaBuffer,
  _rows: number,
): void {
  throw new DramaError('CUDA_BLOCK_MISSING', 'the cuda delta net block is not built in', { kind: 'internal' });
}
