// Placeholder with the fixed signature of the cuda attention block, so that the backend compiles before the block
// module lands; it refuses by name.
import { DramaError } from '../../errors.ts';
import type { AttentionWeights, CallTables, KeyValueSlab } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { CudaBuffer } from './tensors.ts';

export function runAttention(
  _ctx: BlockContext,
  _weights: AttentionWeights<CudaBuffer>,
  _x: CudaBuffer,
  _slab: KeyValueSlab<CudaBuffer>,
  _tables: CallTables<CudaBuffer>,
  _out: CudaBuffer,
  _rows: number,
): void {
  throw new DramaError('CUDA_BLOCK_MISSING', 'the cuda attention block is not built in', { kind: 'internal' });
}
