// Softmax attention on the device (the backbone's gated attention and the tower's plain attention), over lane slots:
// the cpu block's computation (src/backend/cpu/attention-block.ts) with its bf16 rounding points.
//   q (+gate), k, v = x · W{q,k,v}ᵀ (bf16, one segmented GEMM) → attention_prepare_bf16: zero-centred q/k norms per head (bf16), partial
//   RoPE at each row's position (bf16), K/V appended at the row's (slot, position) → attention_bf16_d{D} (calls of at
//   most 64 rows, a KV head's query heads in blocks of at most 4, + the combine) or attention_grouped_bf16_d{D}
//   (larger calls: a prefill chunk's rows of one slot share each staged tile): causal GQA over the slot's keys
//   0..position in 64-key tiles, × sigmoid(gate) when gated (bf16) → o_proj into `out`.
// A call of at most PREPARE_IN_PROJECTION_MOST_ROWS rows whose q|k|v splits K runs the prepare inside the
// projection's combine (attention_qkv_prepare.cu): one launch for two, the same bits.
// A row whose (slot, position) lies outside the slab gets NaN outputs and writes no slab rows (the kernels check each
// row on the device; nothing is read back).
import { DramaError } from '../../errors.ts';
import type { AttentionWeights, CallTables, KeyValueSlab } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import {
  ATTENTION_MOST_GROUP,
  ATTENTION_SPLIT_KEYS,
  attention,
  attentionPrepare,
  attentionWorkspaceBytes,
} from './ops/attention.ts';
import { attentionQkvPrepare, combinesIntoAttention } from './ops/attentionQkvPrepare.ts';
import { type CudaBuffer, requireDtype } from './tensors.ts';

/** Head dims the attention kernels are built for. */
const HEAD_DIMS: readonly number[] = [64, 128, 256];
/** Splits of a row's keys sit in a grid dimension. */
const MOST_SPLITS = 65535;

function refuse(param: string, message: string): never {
  throw new DramaError('KERNEL_GEOMETRY_UNSUPPORTED', `attention: ${message}`, { kind: 'bad_checkpoint', param });
}

/** The most query heads one block of a decode call's attention walks (each a warp); a KV head's group in blocks of
 * this many reaches more SMs, each block staging the same tiles, and was faster at every batch on the H200 than one
 * block a group or blocks of 2 (docs/gpu.md, "decode folds settled"). */
const DECODE_HEADS_PER_BLOCK = 4;

/** The largest divisor of the group not above DECODE_HEADS_PER_BLOCK: each block a whole number of its heads. */
export function decodeHeadsPerBlock(group: number): number {
  for (let heads = Math.min(DECODE_HEADS_PER_BLOCK, group); heads > 1; heads--) {
    if (group % heads === 0) return heads;
  }
  return 1;
}

/**
 * The most rows a call may have to run its prepare inside the q|k|v projection's combine: the one launch's blocks
 * each combine a whole head, so from 8 rows on the two launches' wider grids were as fast or faster on the H200
 * (docs/gpu.md, "decode folds settled").
 */
export const PREPARE_IN_PROJECTION_MOST_ROWS = 4;

/** Refuses what the attention kernels cannot serve, before anything is launched. */
export function checkAttentionGeometry(weights: AttentionWeights<CudaBuffer>, slab: KeyValueSlab<CudaBuffer>): void {
  const { heads, keyValueHeads, headDim, rotaryDim } = weights;
  if (!HEAD_DIMS.includes(headDim)) refuse('headDim', `head dim ${headDim} is not one of ${HEAD_DIMS.join(', ')}`);
  if (!Number.isInteger(keyValueHeads) || keyValueHeads < 1) {
    refuse('keyValueHeads', `${keyValueHeads} key/value heads`);
  }
  const group = heads / keyValueHeads;
  if (!Number.isInteger(group) || group < 1 || group > ATTENTION_MOST_GROUP) {
    refuse(
      'heads',
      `${heads} query heads over ${keyValueHeads} key/value heads is not a group of 1 to ${ATTENTION_MOST_GROUP}`,
    );
  }
  if (!Number.isInteger(rotaryDim) || rotaryDim < 2 || rotaryDim > headDim || rotaryDim % 2 !== 0) {
    refuse('rotaryDim', `rotary dim ${rotaryDim} is not even within [2, ${headDim}]`);
  }
  const queryRows = heads * headDim * (weights.outputGate ? 2 : 1);
  const kvRows = keyValueHeads * headDim;
  const expect = (name: string, shape: readonly number[], rows: number) => {
    if (shape.length !== 2 || shape[0] !== rows)
      refuse(name, `${name} is [${shape.join(', ')}], expected [${rows}, H]`);
  };
  expect('qProj', weights.qProj.shape, queryRows);
  expect('kProj', weights.kProj.shape, kvRows);
  expect('vProj', weights.vProj.shape, kvRows);
  if (weights.oProj.shape[1] !== heads * headDim) {
    refuse('oProj', `oProj is [${weights.oProj.shape.join(', ')}], expected [H, ${heads * headDim}]`);
  }
  for (const [name, norm] of [
    ['qNorm', weights.qNorm],
    ['kNorm', weights.kNorm],
  ] as const) {
    if (norm.shape.length !== 1 || norm.shape[0] !== headDim) refuse(name, `${name} is not [${headDim}]`);
    requireDtype(norm.data, 'bf16', `attention ${name}`);
  }
  for (const [name, tensor] of [
    ['keys', slab.keys],
    ['values', slab.values],
  ] as const) {
    const [slots, capacity, kvHeads, dim] = tensor.shape;
    if (tensor.shape.length !== 4 || kvHeads !== keyValueHeads || dim !== headDim || !slots || !capacity) {
      refuse(name, `${name} slab is [${tensor.shape.join(', ')}], expected [S, R, ${keyValueHeads}, ${headDim}]`);
    }
    requireDtype(tensor.data, 'bf16', `attention ${name} slab`);
  }
  if (slab.keys.shape[0] !== slab.values.shape[0] || slab.keys.shape[1] !== slab.values.shape[1]) {
    refuse('values', 'the key and value slabs differ in shape');
  }
  if (Math.ceil(slab.keys.shape[1]! / ATTENTION_SPLIT_KEYS) > MOST_SPLITS) {
    refuse('keys', `a slab of ${slab.keys.shape[1]} rows per slot needs more than ${MOST_SPLITS} splits`);
  }
}

export function runAttention(
  ctx: BlockContext,
  weights: AttentionWeights<CudaBuffer>,
  x: CudaBuffer,
  slab: KeyValueSlab<CudaBuffer>,
  tables: CallTables<CudaBuffer>,
  out: CudaBuffer,
  rows: number,
): void {
  checkAttentionGeometry(weights, slab);
  const { heads, keyValueHeads, headDim } = weights;
  requireDtype(x, 'bf16', 'attention input');
  requireDtype(out, 'bf16', 'attention output');
  requireDtype(tables.rows, 'i32', 'row table');
  if (tables.rows.elements < 2 * rows) {
    throw new DramaError('LANE_ROWS_EXCEEDED', `a row table of ${tables.rows.elements / 2} rows for ${rows} rows`, {
      kind: 'internal',
    });
  }
  const queryWidth = heads * headDim;
  const projectedWidth = weights.qProj.shape[0]!;
  const kvWidth = keyValueHeads * headDim;
  const { scratch } = ctx;
  const projected = scratch.buffer('attention.projected', 'bf16', rows * projectedWidth);
  const key = scratch.buffer('attention.key', 'bf16', rows * kvWidth);
  const value = scratch.buffer('attention.value', 'bf16', rows * kvWidth);
  const query = scratch.buffer('attention.query', 'bf16', rows * queryWidth);
  const attended = scratch.buffer('attention.attended', 'bf16', rows * queryWidth);
  const segments = [
    { weight: weights.qProj, out: projected },
    { weight: weights.kProj, out: key },
    { weight: weights.vProj, out: value },
  ];
  const geometry = {
    queryHeads: heads,
    kvHeads: keyValueHeads,
    headDim,
    slots: slab.keys.shape[0]!,
    capacity: slab.keys.shape[1]!,
  };
  const prepare = {
    ...geometry,
    qOut: query.pointer,
    keys: slab.keys.data.pointer,
    values: slab.values.data.pointer,
    qNorm: weights.qNorm.data.pointer,
    kNorm: weights.kNorm.data.pointer,
    rowTable: tables.rows.pointer,
    rows,
    rotaryDims: weights.rotaryDim,
    theta: weights.ropeTheta,
    style: weights.ropeStyle,
    gated: weights.outputGate,
    eps: weights.eps,
  };
  // Where q|k|v splits K in a call of few rows, the projection's combine runs the prepare itself.
  const prepared = ctx.linearsCombinedBy(x, segments, rows, (left) => {
    if (rows > PREPARE_IN_PROJECTION_MOST_ROWS || !combinesIntoAttention(left, prepare)) return false;
    attentionQkvPrepare(ctx.cuda, { ...prepare, combine: left });
    return true;
  });
  if (!prepared) {
    attentionPrepare(ctx.cuda, { ...prepare, qProj: projected.pointer, kProj: key.pointer, vProj: value.pointer });
  }
  // The gate of head h is the second half of q_proj's [query | gate] rows of that head: read in place.
  const gate = weights.outputGate
    ? {
        gate: projected.pointer + BigInt(headDim * 2),
        gateRowStride: projectedWidth,
        gateHeadStride: 2 * headDim,
      }
    : {};
  const workspace = scratch.bytes('attention.workspace', attentionWorkspaceBytes(rows, geometry));
  attention(ctx.cuda, {
    ...geometry,
    ...gate,
    out: attended.pointer,
    q: query.pointer,
    keys: slab.keys.data.pointer,
    values: slab.values.data.pointer,
    rowTable: tables.rows.pointer,
    rows,
    workspace,
    headsPerBlock: decodeHeadsPerBlock(weights.heads / weights.keyValueHeads),
  });
  ctx.linear(attended, weights.oProj, out, rows);
}
