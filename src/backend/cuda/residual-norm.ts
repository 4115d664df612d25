// A block's output projection with the residual add and norm after it (the Backend's ResidualNorm epilogue). Where
// the GEMM splits K (calls of at most 64 rows), the norm reads the GEMM's fp32 partials in place of its combine
// (add_partials_rms_norm: gemm_combine's additions and rounding, then add_rms_norm's), one dependent launch fewer with
// the same bits, and the branch is not stored; else the GEMM writes the branch and add_rms_norm reads it.
import { DramaError } from '../../errors.ts';
import type { CudaContext } from './context.ts';
import { type GemmArguments, gemm } from './ops/gemm.ts';
import { addPartialsRmsNorm, addRmsNorm, type RmsNormArguments } from './ops/rmsNorm.ts';

/**
 * y = x · wᵀ (bf16), then norm.x += y and norm.out = the zero-centred norm of the sum; `y` is left unwritten where K
 * splits. Every refusal comes before the first launch.
 */
export function linearResidualNorm(cuda: CudaContext, projection: GemmArguments, norm: RmsNormArguments): void {
  if (projection.output === 'f32') throw mismatch('output', 'the residual add reads a bf16 projection, not f32');
  if (norm.rows !== projection.rows) {
    throw mismatch('rows', `the norm's ${norm.rows} rows are not the projection's ${projection.rows}`);
  }
  if (norm.cols !== projection.outFeatures) {
    throw mismatch(
      'cols',
      `the norm's ${norm.cols} columns are not the projection's ${projection.outFeatures} outputs`,
    );
  }
  if (norm.out === norm.x) throw mismatch('out', 'the norm after a residual add cannot write over the residual');
  const left = gemm(cuda, projection, { combine: 'caller' });
  if (left === undefined) addRmsNorm(cuda, { ...norm, source: projection.y });
  else addPartialsRmsNorm(cuda, { ...norm, partials: left.partials, chunks: left.chunks });
}

function mismatch(param: string, message: string): DramaError {
  return new DramaError('KERNEL_ARGUMENT_INVALID', message, { kind: 'internal', param });
}
