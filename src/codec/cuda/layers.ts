// The launch sequences of the codec decode's layers on CUDA, as decoder.ts (the cpu codec) runs them: the windowed
// post-module transformer, the quantizer's upsample stages (transposed conv k = s, ConvNeXt), the DAC decoder's
// first conv, blocks (Snake + transposed conv, three residual units) and last conv with tanh. Every layer reads
// and writes its lanes' state by slot through the call's sequence table; each conv's history update runs after the
// conv that reads it. The encode (encoder.ts) runs its convs, transformers and ConvNeXt blocks through the same steps.
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import {
  type CodecActivation,
  type CodecCall,
  type CodecPartials,
  type CodecPrecision,
  type CodecStaged,
  codecConv,
  codecHistoryUpdate,
  codecTransposedConv,
  transposedHistoryRows,
} from '../../backend/cuda/ops/codecConv.ts';
import { codecDepthwiseConv, codecLayerNorm, type QuantizerGeometry } from '../../backend/cuda/ops/codecRows.ts';
import {
  codecRingUpdate,
  codecRmsNorm,
  codecRope,
  codecSwiGlu,
  codecWindowAttention,
} from '../../backend/cuda/ops/codecTransformer.ts';
import { DramaError } from '../../errors.ts';
import type { CodecConfig } from '../config.ts';
import { DEPTHWISE_KERNEL, LAYER_NORM_EPS } from '../convnext.ts';
import type {
  DeviceConv,
  DeviceConvNeXt,
  DeviceDecoderBlock,
  DeviceResample,
  DeviceTransformer,
} from './device-weights.ts';
import type { BlockHistories, Slab, TransformerRings } from './lane-state.ts';

/** The sequence table of one call, in frames; each layer scales it by its rows per frame. */
export interface CallTable {
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  readonly longestSequence: number;
  /** Frames in the call, all lanes together. */
  readonly frames: number;
  /** One entry (0, 0, frames, 0): every lane's rows as one sequence, for convs that carry no history. */
  readonly flat: DevicePointer;
  /** Scratch where the `f16` convs of calls with few rows split their sums (codecConv.ts); absent: never split. */
  readonly splitSums?: { readonly pointer: DevicePointer; readonly bytes: number };
  /** Scratch where the `f16` convs stage their inputs once a layer (codecConvMma.ts); absent: each block stages. */
  readonly stagedInputs?: { readonly pointer: DevicePointer; readonly bytes: number };
}

function at(table: CallTable, rowScale: number): CodecCall {
  const { sequences, sequenceCount, longestSequence } = table;
  return { sequences, sequenceCount, longestSequence, rowScale };
}

/** The split sums' and staged inputs' scratch for a layer at `rowScale` rows per frame. */
function scratchAt(table: CallTable, rowScale: number): { partials?: CodecPartials; staged?: CodecStaged } {
  const rows = table.frames * rowScale;
  return {
    ...(table.splitSums === undefined ? {} : { partials: { ...table.splitSums, rows } }),
    ...(table.stagedInputs === undefined ? {} : { staged: { ...table.stagedInputs, rows } }),
  };
}

interface ConvLaunch {
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  readonly alpha?: DevicePointer;
  readonly residual?: DevicePointer;
  readonly scale?: DevicePointer;
  readonly history?: Slab;
  readonly dilation?: number;
  readonly activation?: CodecActivation;
}

/**
 * A causal conv (or a k1 linear) over contiguous rows, then its history update when it carries one. A conv without
 * history runs over all lanes' rows as one sequence: its outputs do not depend on where a lane starts, and its
 * weights are read once per tile of rows rather than once per lane.
 */
export function conv(
  cuda: CudaContext,
  table: CallTable,
  rowScale: number,
  layer: DeviceConv,
  precision: CodecPrecision,
  launch: ConvLaunch,
): void {
  const dilation = launch.dilation ?? 1;
  const historyRows = (layer.kernel - 1) * dilation;
  const call = at(table, rowScale);
  const flat = { sequences: table.flat, sequenceCount: 1, longestSequence: table.frames, rowScale };
  codecConv(cuda, {
    ...(historyRows === 0 ? flat : call),
    out: launch.out,
    outStride: layer.outputs,
    x: launch.x,
    xStride: layer.inputs,
    weight: layer.weight,
    ...(layer.bias === undefined ? {} : { bias: layer.bias }),
    ...(launch.alpha === undefined ? {} : { alpha: launch.alpha }),
    ...(launch.residual === undefined ? {} : { residual: launch.residual, residualStride: layer.outputs }),
    ...(launch.scale === undefined ? {} : { scale: launch.scale }),
    // A conv that carries nothing never reads its history argument.
    history: launch.history?.pointer ?? launch.out,
    inputs: layer.inputs,
    outputs: layer.outputs,
    kernel: layer.kernel,
    dilation,
    activation: launch.activation ?? 'identity',
    precision,
    ...scratchAt(table, rowScale),
  });
  if (historyRows === 0) return;
  if (launch.history === undefined || launch.history.rows !== historyRows) {
    throw new DramaError(
      'CODEC_HISTORY_MISSING',
      `codec conv with ${historyRows} history rows launched without its slab`,
      {
        kind: 'internal',
      },
    );
  }
  codecHistoryUpdate(cuda, {
    ...call,
    history: launch.history.pointer,
    x: launch.x,
    xStride: layer.inputs,
    ...(launch.alpha === undefined ? {} : { alpha: launch.alpha }),
    channels: layer.inputs,
    historyRows,
  });
}

/** Rows [frames, ·] buffers of the post-module, each large enough for the call's widest row. */
interface TransformerBuffers {
  readonly x: DevicePointer;
  readonly h: DevicePointer;
  readonly normed: DevicePointer;
  readonly qkv: DevicePointer;
  readonly attended: DevicePointer;
  readonly gateUp: DevicePointer;
  readonly gated: DevicePointer;
}

/** The transformer's buffers from a scratch allocated under their names (the decoder's and the encoder's). */
export function transformerBuffers(scratch: Readonly<Record<string, DevicePointer>>): TransformerBuffers {
  const named = (name: keyof TransformerBuffers) => {
    const pointer = scratch[name];
    if (pointer === undefined) {
      throw new DramaError('CODEC_SCRATCH_MISSING', `codec scratch has no ${name} buffer`, { kind: 'internal' });
    }
    return pointer;
  };
  return {
    x: named('x'),
    h: named('h'),
    normed: named('normed'),
    qkv: named('qkv'),
    attended: named('attended'),
    gateUp: named('gateUp'),
    gated: named('gated'),
  };
}

/**
 * A windowed transformer at `rowScale` rows per frame (the post- and pre-module at 1, the encoder's at its rate):
 * `input` [rows, dim] → `out` [rows, dim] (final RMSNorm included); out must be neither input nor buffers.x.
 */
export function runTransformer(
  cuda: CudaContext,
  table: CallTable,
  rowScale: number,
  weights: DeviceTransformer,
  rings: readonly TransformerRings[],
  precision: CodecPrecision,
  input: DevicePointer,
  out: DevicePointer,
  buffers: TransformerBuffers,
): void {
  const { dim, heads, headDim, window, intermediate, normEps } = weights.config;
  const call = at(table, rowScale);
  const rows = table.frames * rowScale;
  const attention = { heads, headDim, window };
  const linear = (layer: DeviceConv, launch: ConvLaunch) => conv(cuda, table, rowScale, layer, precision, launch);
  let x = input;
  weights.layers.forEach((layer, index) => {
    const ring = rings[index]!;
    codecRmsNorm(cuda, { out: buffers.normed, x, weight: layer.attentionNorm, rows, width: dim, eps: normEps });
    linear(layer.qkv, { out: buffers.qkv, x: buffers.normed });
    const rope = weights.table === undefined ? {} : { table: weights.table };
    codecRope(cuda, {
      ...call,
      qkv: buffers.qkv,
      heads,
      headDim,
      frequencies: weights.frequencies,
      ...rope,
      tablePositions: weights.tablePositions,
    });
    const ringArguments = { ...call, ...attention, keys: ring.keys, values: ring.values, qkv: buffers.qkv };
    codecWindowAttention(cuda, { ...ringArguments, out: buffers.attended });
    codecRingUpdate(cuda, ringArguments);
    const attended = { out: buffers.h, x: buffers.attended, residual: x, scale: layer.attentionScale };
    linear(layer.output, attended);
    codecRmsNorm(cuda, { out: buffers.normed, x: buffers.h, weight: layer.ffnNorm, rows, width: dim, eps: normEps });
    linear(layer.gateUp, { out: buffers.gateUp, x: buffers.normed });
    codecSwiGlu(cuda, { out: buffers.gated, gateUp: buffers.gateUp, rows, intermediate });
    linear(layer.down, {
      out: buffers.x,
      x: buffers.gated,
      residual: buffers.h,
      scale: layer.ffnScale,
    });
    x = buffers.x;
  });
  codecRmsNorm(cuda, { out, x, weight: weights.norm, rows, width: dim, eps: normEps });
}

/** Three scratch buffers of the decoder's widest activation, handed out so that no launch reads what it writes. */
export class Rotation {
  constructor(private readonly buffers: readonly DevicePointer[]) {}

  /** A buffer that is none of `busy`. */
  other(...busy: DevicePointer[]): DevicePointer {
    const free = this.buffers.find((buffer) => !busy.includes(buffer));
    if (free === undefined) {
      throw new DramaError('CODEC_SCRATCH_EXHAUSTED', 'codec decode ran out of scratch buffers', { kind: 'internal' });
    }
    return free;
  }
}

/**
 * ConvNeXt x + γ · pw2(gelu(pw1(layerNorm(dwconv7(x))))) at `rowScale` rows per frame: `input` holds [rows, latent];
 * returns the buffer with its output (neither input nor hidden).
 */
export function runConvNeXt(
  cuda: CudaContext,
  table: CallTable,
  rowScale: number,
  block: DeviceConvNeXt,
  history: Slab,
  precision: CodecPrecision,
  input: DevicePointer,
  rotation: Rotation,
  hidden: DevicePointer,
): DevicePointer {
  const latent = block.pointwise2.outputs;
  const call = at(table, rowScale);
  const rows = table.frames * rowScale;
  const mixed = rotation.other(input);
  codecDepthwiseConv(cuda, {
    ...call,
    out: mixed,
    x: input,
    weight: block.depthwiseWeight,
    bias: block.depthwiseBias,
    history: history.pointer,
    channels: latent,
    kernel: DEPTHWISE_KERNEL,
  });
  codecHistoryUpdate(cuda, {
    ...call,
    history: history.pointer,
    x: input,
    xStride: latent,
    channels: latent,
    historyRows: DEPTHWISE_KERNEL - 1,
  });
  const normed = rotation.other(input, mixed);
  const norm = { weight: block.normWeight, bias: block.normBias, rows, width: latent, eps: LAYER_NORM_EPS };
  codecLayerNorm(cuda, { out: normed, x: mixed, ...norm });
  conv(cuda, table, rowScale, block.pointwise1, precision, { out: hidden, x: normed, activation: 'gelu' });
  const pointwise2 = { out: mixed, x: hidden, residual: input, scale: block.gamma };
  conv(cuda, table, rowScale, block.pointwise2, precision, pointwise2);
  return mixed;
}

/**
 * One upsample stage: transposed conv k = s = factor, then ConvNeXt. `input` holds [rows, latent] at `rowScale` rows
 * per frame; returns the buffer with [rows · factor, latent].
 */
export function runResample(
  cuda: CudaContext,
  table: CallTable,
  rowScale: number,
  stage: DeviceResample,
  history: Slab,
  precision: CodecPrecision,
  input: DevicePointer,
  rotation: Rotation,
  hidden: DevicePointer,
): DevicePointer {
  const latent = stage.upsample.outputs;
  const upsampled = rotation.other(input);
  codecTransposedConv(cuda, {
    ...at(table, rowScale),
    out: upsampled,
    outStride: latent,
    x: input,
    xStride: latent,
    weight: stage.upsample.weight,
    bias: stage.upsample.bias!,
    history: upsampled,
    inputs: latent,
    outputs: latent,
    kernel: stage.factor,
    stride: stage.factor,
    precision,
    ...scratchAt(table, rowScale),
  });
  const scale = rowScale * stage.factor;
  return runConvNeXt(cuda, table, scale, stage, history, precision, upsampled, rotation, hidden);
}

/** A decoder block at `rowScale` input rows per frame; returns the buffer holding its output rows. */
export function runDecoderBlock(
  cuda: CudaContext,
  table: CallTable,
  rowScale: number,
  block: DeviceDecoderBlock,
  histories: BlockHistories,
  precision: CodecPrecision,
  input: DevicePointer,
  rotation: Rotation,
): DevicePointer {
  const { upsample, rate } = block;
  let y = rotation.other(input);
  codecTransposedConv(cuda, {
    ...at(table, rowScale),
    out: y,
    outStride: upsample.outputs,
    x: input,
    xStride: upsample.inputs,
    weight: upsample.weight,
    bias: upsample.bias!,
    alpha: block.alpha,
    history: histories.upsample.pointer,
    inputs: upsample.inputs,
    outputs: upsample.outputs,
    kernel: upsample.kernel,
    stride: rate,
    precision,
    ...scratchAt(table, rowScale),
  });
  codecHistoryUpdate(cuda, {
    ...at(table, rowScale),
    history: histories.upsample.pointer,
    x: input,
    xStride: upsample.inputs,
    alpha: block.alpha,
    channels: upsample.inputs,
    historyRows: transposedHistoryRows(upsample.kernel, rate),
  });
  const unitScale = rowScale * rate;
  block.units.forEach((unit, index) => {
    const mixed = rotation.other(y);
    conv(cuda, table, unitScale, unit.dilated, precision, {
      out: mixed,
      x: y,
      alpha: unit.firstAlpha,
      history: histories.units[index]!,
      dilation: unit.dilation,
    });
    const out = rotation.other(y, mixed);
    const pointwise = { out, x: mixed, alpha: unit.secondAlpha, residual: y };
    conv(cuda, table, unitScale, unit.pointwise, precision, pointwise);
    y = out;
  });
  return y;
}

/** The quantizer's sizes in a codec config, as the quantizer kernels take them. */
export function quantizerGeometry(config: CodecConfig): QuantizerGeometry {
  return {
    latent: config.latentDim,
    codebookDim: config.codebookDim,
    codebooks: 1 + config.residualCodebooks,
    semanticSize: config.semanticCodebookSize,
    residualSize: config.residualCodebookSize,
  };
}
