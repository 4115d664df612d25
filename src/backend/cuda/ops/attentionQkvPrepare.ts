// Launcher for kernels/cuda/attention_qkv_prepare.cu: the attention's q|k|v projection's split-K combine with the
// prepare (q and k normed and rotated, K and V appended to the slabs) in one launch. Its outputs have the bits of
// gemmSegmentsCombine, then attentionPrepare (attention_qkv_prepare.cuh says why), the projection's own included.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { appendPrepareScalars, checkPrepare, type PrepareOutputs } from './attention.ts';
import { GEMM_SEGMENT_PARAMETER_COUNT, type LeftCombine } from './gemmSegments.ts';
import { type KernelName, type LaunchOptions, launch, roundUpToWarp } from './launch.ts';

const KERNEL: KernelName = { family: 'attention_qkv_prepare', name: 'attention_qkv_prepare_bf16' };
/** q_out, keys, values, then the prepare's 14 (appendPrepareScalars). */
const EXTRA_PARAMETERS = 17;

export interface AttentionQkvPrepareArguments extends PrepareOutputs {
  /** The segmented GEMM's left combine: q [rows, Hq·D, ·2 gated], k and v [rows, Hkv·D], in bf16. */
  readonly combine: LeftCombine;
}

type Geometry = Pick<PrepareOutputs, 'queryHeads' | 'kvHeads' | 'headDim' | 'gated' | 'rows'>;

/** Whether a left combine is this attention's q|k|v projection: three bf16 segments of the geometry's widths. */
export function combinesIntoAttention(c: LeftCombine, g: Geometry): boolean {
  const widths = [g.queryHeads * g.headDim * (g.gated ? 2 : 1), g.kvHeads * g.headDim, g.kvHeads * g.headDim];
  return (
    c.rows === g.rows &&
    c.outFeatures.length === widths.length &&
    c.outFeatures.every((n, index) => n === widths[index]) &&
    c.outputs.every((output) => output === 'bf16')
  );
}

export function attentionQkvPrepare(
  cuda: CudaContext,
  a: AttentionQkvPrepareArguments,
  options: LaunchOptions = {},
): void {
  checkPrepare(a);
  if (!combinesIntoAttention(a.combine, a)) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `attention q|k|v prepare: needs the bf16 segments q, k, v of ${a.rows} rows for ${a.queryHeads}:${a.kvHeads} ` +
        `heads of ${a.headDim}${a.gated ? ', gated' : ''}; got widths [${a.combine.outFeatures.join(', ')}] of ` +
        `${a.combine.rows} rows, outputs [${a.combine.outputs.join(', ')}]`,
      { kind: 'internal', param: 'combine' },
    );
  }
  const tensors = a.combine
    .appendParameters(new KernelArguments(GEMM_SEGMENT_PARAMETER_COUNT + EXTRA_PARAMETERS))
    .pointer(a.qOut)
    .pointer(a.keys)
    .pointer(a.values);
  // A thread per element of a head's [query | gate] or its k and v columns.
  const shape = {
    grid: [a.rows * (a.queryHeads + a.kvHeads), 1, 1],
    block: [roundUpToWarp(2 * a.headDim), 1, 1],
  } as const;
  launch(cuda, KERNEL, shape, appendPrepareScalars(tensors, a), options);
}
