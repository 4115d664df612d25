// Gated DeltaNet on the device over the sequences of a call: the cpu block's recurrent form
// (src/backend/cpu/delta-net-block.ts) with its bf16 rounding points. x: [T, H].
//   qkv, z, b, a = x · W{qkv,z,b,a}ᵀ (bf16, four projections in one segmented GEMM) → delta_net_conv_silu_bf16: causal depthwise conv (width
//   4, each sequence's slot's conv state carried) + SiLU (bf16) → delta_net_gates: beta = sigmoid(b), g = −exp(A_log)
//   · softplus(a + dt_bias) (fp32) → delta_net_recurrence_bf16: the delta rule with the slot's fp32 state, q/k
//   L2-normalised and q scaled by 1/sqrt(128) inside (bf16 out) → rms_norm_gated_bf16: norm(o)·w·SiLU(z) per value
//   head (bf16) → out_proj into `out`.
// The four projections keep their own outputs (one launch, four segments): a single concatenated weight would put
// z's rows a projection width apart, and the gated norm reads its gate rows contiguous. A decode call of at most
// COMBINE_IN_PROJECTION_MOST_ROWS rows whose q|k|v splits K runs the conv and the gates inside the projection's
// combine (delta_net_combine.cu): one launch for three, the same bits.
import { DramaError } from '../../errors.ts';
import type { CallTables, DeltaNetSlab, DeltaNetWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import {
  DELTA_NET_CONV_WIDTH,
  DELTA_NET_HEAD_DIM,
  deltaNetConv,
  deltaNetGates,
  deltaNetRecurrence,
} from './ops/deltaNet.ts';
import { combinesIntoDeltaNet, deltaNetSegmentsCombine } from './ops/deltaNetCombine.ts';
import { gatedRmsNorm } from './ops/rmsNorm.ts';
import { type CudaBuffer, requireDtype } from './tensors.ts';

/**
 * The most rows a decode call may have to run its conv and gates inside the projection's combine (the same bits):
 * from 16 rows on the three launches were faster on the H200 (docs/gpu.md, "decode folds settled").
 */
export const COMBINE_IN_PROJECTION_MOST_ROWS = 8;

/** Sequences of one call sit in a grid dimension of the conv and the recurrence. */
const MOST_SEQUENCES = 65535;

function refuse(param: string, message: string): never {
  throw new DramaError('KERNEL_GEOMETRY_UNSUPPORTED', `Gated DeltaNet: ${message}`, { kind: 'bad_checkpoint', param });
}

function expectShape(name: string, shape: readonly number[], expected: readonly (number | undefined)[]): void {
  const matches =
    shape.length === expected.length && expected.every((size, index) => size === undefined || size === shape[index]);
  if (!matches) {
    const wanted = expected.map((size) => size ?? '*').join(', ');
    refuse(name, `${name} is [${shape.join(', ')}], expected [${wanted}]`);
  }
}

/** Refuses what the Gated DeltaNet kernels cannot serve, before anything is launched. */
export function checkDeltaNetGeometry(weights: DeltaNetWeights<CudaBuffer>, slab: DeltaNetSlab<CudaBuffer>): void {
  const { keyHeads, valueHeads, keyDim, valueDim, convKernel } = weights;
  if (keyDim !== DELTA_NET_HEAD_DIM) refuse('keyDim', `key head dim ${keyDim} is not ${DELTA_NET_HEAD_DIM}`);
  if (valueDim !== DELTA_NET_HEAD_DIM) refuse('valueDim', `value head dim ${valueDim} is not ${DELTA_NET_HEAD_DIM}`);
  if (convKernel !== DELTA_NET_CONV_WIDTH)
    refuse('convKernel', `conv width ${convKernel} is not ${DELTA_NET_CONV_WIDTH}`);
  if (!Number.isInteger(keyHeads) || keyHeads < 1 || !Number.isInteger(valueHeads) || valueHeads % keyHeads !== 0) {
    refuse('valueHeads', `${valueHeads} value heads are not a multiple of ${keyHeads} key heads`);
  }
  if (valueHeads > MOST_SEQUENCES) refuse('valueHeads', `${valueHeads} value heads exceed ${MOST_SEQUENCES}`);
  const channels = 2 * keyHeads * keyDim + valueHeads * valueDim;
  const valueWidth = valueHeads * valueDim;
  expectShape('inProjQkv', weights.inProjQkv.shape, [channels, undefined]);
  expectShape('inProjZ', weights.inProjZ.shape, [valueWidth, undefined]);
  expectShape('inProjB', weights.inProjB.shape, [valueHeads, undefined]);
  expectShape('inProjA', weights.inProjA.shape, [valueHeads, undefined]);
  expectShape('outProj', weights.outProj.shape, [undefined, valueWidth]);
  expectShape('conv', weights.conv.shape, [channels, 1, convKernel]);
  expectShape('aLog', weights.aLog.shape, [valueHeads]);
  expectShape('dtBias', weights.dtBias.shape, [valueHeads]);
  expectShape('norm', weights.norm.shape, [valueDim]);
  requireDtype(weights.conv.data, 'bf16', 'Gated DeltaNet conv weight');
  requireDtype(weights.norm.data, 'bf16', 'Gated DeltaNet norm weight');
  const parameterDtype = weights.aLog.dtype;
  if ((parameterDtype !== 'f32' && parameterDtype !== 'bf16') || weights.dtBias.dtype !== parameterDtype) {
    throw new DramaError(
      'TENSOR_DTYPE_UNSUPPORTED',
      `Gated DeltaNet A_log (${parameterDtype}) and dt_bias (${weights.dtBias.dtype}) must both be f32 or both bf16`,
      { kind: 'bad_checkpoint', param: 'aLog' },
    );
  }
  expectShape('conv slab', slab.conv.shape, [undefined, convKernel - 1, channels]);
  expectShape('recurrent slab', slab.recurrent.shape, [slab.conv.shape[0], valueHeads, keyDim, valueDim]);
  requireDtype(slab.conv.data, 'bf16', 'Gated DeltaNet conv slab');
  requireDtype(slab.recurrent.data, 'f32', 'Gated DeltaNet recurrent slab');
}

export function runDeltaNet(
  ctx: BlockContext,
  weights: DeltaNetWeights<CudaBuffer>,
  x: CudaBuffer,
  slab: DeltaNetSlab<CudaBuffer>,
  tables: CallTables<CudaBuffer>,
  out: CudaBuffer,
  rows: number,
): void {
  checkDeltaNetGeometry(weights, slab);
  const { keyHeads, valueHeads, keyDim, valueDim, eps } = weights;
  const sequenceCount = tables.sequenceCount;
  requireDtype(x, 'bf16', 'Gated DeltaNet input');
  requireDtype(out, 'bf16', 'Gated DeltaNet output');
  requireDtype(tables.sequences, 'i32', 'sequence table');
  if (!Number.isInteger(sequenceCount) || sequenceCount < 1 || sequenceCount > Math.min(rows, MOST_SEQUENCES)) {
    throw new DramaError('PREFILL_CHUNK_INVALID', `${sequenceCount} sequences for a call of ${rows} rows`, {
      kind: 'internal',
    });
  }
  if (tables.sequences.elements < 4 * sequenceCount) {
    throw new DramaError('PREFILL_CHUNK_INVALID', `a sequence table of ${tables.sequences.elements / 4} entries`, {
      kind: 'internal',
    });
  }
  const channels = 2 * keyHeads * keyDim + valueHeads * valueDim;
  const valueWidth = valueHeads * valueDim;
  const { scratch, cuda } = ctx;
  const mixed = scratch.buffer('deltaNet.mixed', 'bf16', rows * channels);
  const z = scratch.buffer('deltaNet.z', 'bf16', rows * valueWidth);
  const b = scratch.buffer('deltaNet.b', 'bf16', rows * valueHeads);
  const a = scratch.buffer('deltaNet.a', 'bf16', rows * valueHeads);
  const convolved = scratch.buffer('deltaNet.convolved', 'bf16', rows * channels);
  const g = scratch.buffer('deltaNet.g', 'f32', rows * valueHeads);
  const beta = scratch.buffer('deltaNet.beta', 'f32', rows * valueHeads);
  const core = scratch.buffer('deltaNet.core', 'bf16', rows * valueWidth);
  const normed = scratch.buffer('deltaNet.normed', 'bf16', rows * valueWidth);
  const parameterDtype = weights.aLog.dtype === 'bf16' ? 'bf16' : 'f32';
  const segments = [
    { weight: weights.inProjQkv, out: mixed },
    { weight: weights.inProjZ, out: z },
    { weight: weights.inProjB, out: b },
    { weight: weights.inProjA, out: a },
  ];
  // Every sequence one row: a decode call, whose conv needs no row of the call but its own.
  const decode = sequenceCount === rows;
  // Decode of few rows with q|k|v split: the projection's combine runs the conv and the gates itself.
  const combined = ctx.linearsCombinedBy(x, segments, rows, (left) => {
    if (!decode || rows > COMBINE_IN_PROJECTION_MOST_ROWS || !combinesIntoDeltaNet(left)) return false;
    deltaNetSegmentsCombine(cuda, {
      combine: left,
      convolved: convolved.pointer,
      convWeight: weights.conv.data.pointer,
      convState: slab.conv.data.pointer,
      sequences: tables.sequences.pointer,
      sequenceCount,
      g: g.pointer,
      beta: beta.pointer,
      aLog: weights.aLog.data.pointer,
      dtBias: weights.dtBias.data.pointer,
      parameterDtype,
    });
    return true;
  });
  if (!combined) {
    // The gates (from b and a) and the conv (from q|k|v) are independent: the gates run beside the conv.
    cuda.alongside(
      () =>
        deltaNetGates(cuda, {
          g: g.pointer,
          beta: beta.pointer,
          b: b.pointer,
          a: a.pointer,
          rowStride: valueHeads,
          aLog: weights.aLog.data.pointer,
          dtBias: weights.dtBias.data.pointer,
          parameterDtype,
          rows,
          valueHeads,
        }),
      () =>
        deltaNetConv(cuda, {
          out: convolved.pointer,
          outRowStride: channels,
          x: mixed.pointer,
          xRowStride: channels,
          weight: weights.conv.data.pointer,
          convState: slab.conv.data.pointer,
          sequences: tables.sequences.pointer,
          sequenceCount,
          // Every sequence has a row, so none is longer than this (the kernel walks a longer one whole anyway).
          longestSequence: rows - sequenceCount + 1,
          channels,
        }),
    );
  }
  deltaNetRecurrence(cuda, {
    out: core.pointer,
    qkv: convolved.pointer,
    qkvRowStride: channels,
    g: g.pointer,
    beta: beta.pointer,
    state: slab.recurrent.data.pointer,
    sequences: tables.sequences.pointer,
    sequenceCount,
    keyHeads,
    valueHeads,
  });
  gatedRmsNorm(cuda, {
    out: normed.pointer,
    x: core.pointer,
    gate: z.pointer,
    weight: weights.norm.data.pointer,
    rows: rows * valueHeads,
    cols: valueDim,
    eps,
  });
  ctx.linear(normed, weights.outProj, out, rows);
}
