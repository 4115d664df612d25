// The codec's decode weights on the device, laid out once for the kernels (src/backend/cuda/ops/codec*.ts): convs and
// linears as [Cin, K, Cout] (fp32, or fp16 rounded to nearest even in the release's precision), everything else
// (biases, Snake α, norms, LayerScale, codebooks) fp32. Names follow weights.ts; decoder.ts says what runs when. The
// builders of shared blocks (residual units, ConvNeXt, transformers) also lay out the encode's (encoder-weights.ts).
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import type { Allocation } from '../../backend/cuda/memory.ts';
import type { CodecPrecision } from '../../backend/cuda/ops/codecConv.ts';
import { quantizerTables } from '../../backend/cuda/ops/codecRows.ts';
import { codecRopeFrequencies } from '../../backend/cuda/ops/codecTransformer.ts';
import {
  codecConvWeightLayout,
  codecTransposedAsConvLayout,
  codecTransposedWeightLayout,
  repeatedBias,
  toF16Bits,
} from '../../backend/cuda/ops/codecWeightLayout.ts';
import { RESIDUAL_DILATIONS } from '../blocks.ts';
import type { CodecConfig, CodecTransformerConfig } from '../config.ts';
import { codebookPrefix } from '../quantizer.ts';
import { type CodecWeights, weight } from '../weights.ts';

/** A conv (or a linear as a k1 conv) ready for codecConv / codecTransposedConv. */
export interface DeviceConv {
  readonly weight: DevicePointer;
  readonly bias?: DevicePointer;
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
}

export interface DeviceTransformerLayer {
  readonly attentionNorm: DevicePointer;
  readonly qkv: DeviceConv;
  readonly output: DeviceConv;
  readonly attentionScale: DevicePointer;
  readonly ffnNorm: DevicePointer;
  /** w1 and w3 as one linear: [gate | up] per row. */
  readonly gateUp: DeviceConv;
  readonly down: DeviceConv;
  readonly ffnScale: DevicePointer;
}

export interface DeviceTransformer {
  readonly config: CodecTransformerConfig;
  readonly layers: readonly DeviceTransformerLayer[];
  readonly norm: DevicePointer;
  /** f64 [headDim/2]: ropeBase^(2i/headDim). */
  readonly frequencies: DevicePointer;
  readonly table?: DevicePointer;
  readonly tablePositions: number;
}

/** ConvNeXt: x + γ · pw2(gelu(pw1(layerNorm(dwconv7(x))))). */
export interface DeviceConvNeXt {
  readonly depthwiseWeight: DevicePointer;
  readonly depthwiseBias: DevicePointer;
  readonly normWeight: DevicePointer;
  readonly normBias: DevicePointer;
  readonly pointwise1: DeviceConv;
  readonly pointwise2: DeviceConv;
  readonly gamma: DevicePointer;
}

export interface DeviceResample extends DeviceConvNeXt {
  /** Transposed conv k = s = factor. */
  readonly upsample: DeviceConv;
  readonly factor: number;
}

export interface DeviceResidualUnit {
  readonly firstAlpha: DevicePointer;
  readonly dilated: DeviceConv;
  readonly dilation: number;
  readonly secondAlpha: DevicePointer;
  readonly pointwise: DeviceConv;
}

export interface DeviceDecoderBlock {
  readonly alpha: DevicePointer;
  readonly upsample: DeviceConv;
  readonly rate: number;
  readonly units: readonly DeviceResidualUnit[];
}

export interface DeviceQuantizer {
  readonly semanticEntries: DevicePointer;
  readonly residualEntries: DevicePointer;
  readonly outWeights: DevicePointer;
  readonly outBiases: DevicePointer;
}

export interface DeviceDecodeWeights {
  readonly precision: CodecPrecision;
  readonly quantizer: DeviceQuantizer;
  readonly postModule: DeviceTransformer;
  readonly resamples: readonly DeviceResample[];
  readonly first: DeviceConv;
  readonly blocks: readonly DeviceDecoderBlock[];
  readonly lastAlpha: DevicePointer;
  readonly last: DeviceConv;
  /** Device bytes the weights hold. */
  readonly bytes: number;
  free(): void;
}

function concatenate(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Uploads as it goes and keeps every allocation, so a failure part way frees what was made. */
export class Uploader {
  readonly allocations: Allocation[] = [];

  constructor(
    private readonly cuda: CudaContext,
    readonly precision: CodecPrecision,
    /** Allocate what the conv weights need without converting them (device-bytes.ts sizes the uploads). */
    private readonly sizeOnly = false,
  ) {}

  floats(values: Float32Array, label: string): DevicePointer {
    return this.keep(this.cuda.upload(values, label));
  }

  doubles(values: Float64Array, label: string): DevicePointer {
    return this.keep(this.cuda.upload(values, label));
  }

  /** A conv weight of `elements` values, laid out in [Cin, K, Cout] by `lay` (not run when only sizing), in the
   *  chosen precision. */
  laid(elements: number, lay: () => Float32Array, label: string): DevicePointer {
    if (this.sizeOnly) {
      return this.keep(this.cuda.allocate(Math.max(elements * (this.precision === 'f32' ? 4 : 2), 1), label));
    }
    const values = lay();
    return this.keep(this.cuda.upload(this.precision === 'f32' ? values : toF16Bits(values), label));
  }

  private keep(allocation: Allocation): DevicePointer {
    this.allocations.push(allocation);
    return allocation.pointer;
  }
}

export function conv(
  up: Uploader,
  weights: CodecWeights,
  name: string,
  shape: { inputs: number; outputs: number; kernel: number },
): DeviceConv {
  const folded = weight(weights, `${name}.conv.weight`);
  const lay = () => codecConvWeightLayout(folded, shape.outputs, shape.inputs, shape.kernel);
  return {
    ...shape,
    weight: up.laid(folded.length, lay, `${name}.conv.weight`),
    bias: up.floats(weight(weights, `${name}.conv.bias`), `${name}.conv.bias`),
  };
}

function transposed(
  up: Uploader,
  weights: CodecWeights,
  name: string,
  shape: { inputs: number; outputs: number; kernel: number },
  stride: number,
): DeviceConv {
  const folded = weight(weights, `${name}.conv.weight`);
  const bias = weight(weights, `${name}.conv.bias`);
  // Tensor cores run it as the conv of s·Cout outputs it is (codecConv.ts transposedOnTensorCores).
  const asConv = up.precision === 'f16';
  const { inputs, outputs, kernel } = shape;
  const lay = () =>
    asConv
      ? codecTransposedAsConvLayout(folded, inputs, outputs, kernel, stride)
      : codecTransposedWeightLayout(folded, inputs, outputs, kernel);
  return {
    ...shape,
    weight: up.laid(folded.length, lay, `${name}.conv.weight`),
    bias: up.floats(asConv ? repeatedBias(bias, stride) : bias, `${name}.conv.bias`),
  };
}

/** A PyTorch linear [out, in] (rows of several stacked), optional bias, as a k1 conv. */
function linear(up: Uploader, rows: readonly Float32Array[], inputs: number, label: string, bias?: Float32Array) {
  const elements = rows.reduce((total, row) => total + row.length, 0);
  const outputs = elements / inputs;
  return {
    inputs,
    outputs,
    kernel: 1,
    weight: up.laid(elements, () => codecConvWeightLayout(concatenate(rows), outputs, inputs, 1), `${label}.weight`),
    ...(bias === undefined ? {} : { bias: up.floats(bias, `${label}.bias`) }),
  };
}

export function transformer(
  up: Uploader,
  weights: CodecWeights,
  prefix: string,
  config: CodecTransformerConfig,
): DeviceTransformer {
  const width = config.heads * config.headDim;
  const layers: DeviceTransformerLayer[] = [];
  for (let index = 0; index < config.layers; index++) {
    const name = `${prefix}.layers.${index}`;
    const get = (suffix: string) => weight(weights, `${name}.${suffix}`);
    const floats = (suffix: string) => up.floats(get(suffix), `${name}.${suffix}`);
    layers.push({
      attentionNorm: floats('attention_norm.weight'),
      qkv: linear(up, [get('attention.wqkv.weight')], config.dim, `${name}.attention.wqkv`),
      output: linear(up, [get('attention.wo.weight')], width, `${name}.attention.wo`),
      attentionScale: floats('attention_layer_scale.gamma'),
      ffnNorm: floats('ffn_norm.weight'),
      gateUp: linear(
        up,
        [get('feed_forward.w1.weight'), get('feed_forward.w3.weight')],
        config.dim,
        `${name}.feed_forward.w1|w3`,
      ),
      down: linear(up, [get('feed_forward.w2.weight')], config.intermediate, `${name}.feed_forward.w2`),
      ffnScale: floats('ffn_layer_scale.gamma'),
    });
  }
  const frequencies = codecRopeFrequencies(config.ropeBase, config.headDim);
  const table = weights.get(`${prefix}.freqs_cis`);
  return {
    config,
    layers,
    norm: up.floats(weight(weights, `${prefix}.norm.weight`), `${prefix}.norm.weight`),
    frequencies: up.doubles(frequencies, `${prefix}.rope frequencies`),
    ...(table === undefined ? {} : { table: up.floats(table, `${prefix}.freqs_cis`) }),
    tablePositions: table === undefined ? 0 : table.length / config.headDim,
  };
}

/** The ConvNeXt block at `block` (quantizer.upsample.N.1, quantizer.downsample.N.1). */
export function convNeXt(up: Uploader, weights: CodecWeights, block: string, config: CodecConfig): DeviceConvNeXt {
  const latent = config.latentDim;
  const get = (suffix: string) => weight(weights, `${block}.${suffix}`);
  const floats = (suffix: string) => up.floats(get(suffix), `${block}.${suffix}`);
  return {
    depthwiseWeight: floats('dwconv.conv.weight'),
    depthwiseBias: floats('dwconv.conv.bias'),
    normWeight: floats('norm.weight'),
    normBias: floats('norm.bias'),
    pointwise1: linear(up, [get('pwconv1.weight')], latent, `${block}.pwconv1`, get('pwconv1.bias')),
    pointwise2: linear(up, [get('pwconv2.weight')], config.convNextHidden, `${block}.pwconv2`, get('pwconv2.bias')),
    gamma: floats('gamma'),
  };
}

function resample(up: Uploader, weights: CodecWeights, index: number, config: CodecConfig, factor: number) {
  const prefix = `quantizer.upsample.${index}`;
  const latent = config.latentDim;
  return {
    upsample: transposed(up, weights, `${prefix}.0`, { inputs: latent, outputs: latent, kernel: factor }, factor),
    factor,
    ...convNeXt(up, weights, `${prefix}.1`, config),
  };
}

/** Snake's α of the Snake module `name`. */
export function alpha(up: Uploader, weights: CodecWeights, name: string): DevicePointer {
  return up.floats(weight(weights, `${name}.alpha`), `${name}.alpha`);
}

/** The residual unit whose Sequential is `name` (…block): Snake, dilated conv k7, Snake, conv k1. */
export function residualUnit(
  up: Uploader,
  weights: CodecWeights,
  name: string,
  channels: number,
  dilation: number,
): DeviceResidualUnit {
  return {
    firstAlpha: alpha(up, weights, `${name}.0`),
    dilated: conv(up, weights, `${name}.1`, { inputs: channels, outputs: channels, kernel: 7 }),
    dilation,
    secondAlpha: alpha(up, weights, `${name}.2`),
    pointwise: conv(up, weights, `${name}.3`, { inputs: channels, outputs: channels, kernel: 1 }),
  };
}

function decoderBlock(up: Uploader, weights: CodecWeights, index: number, inputs: number, rate: number) {
  const prefix = `decoder.model.${index + 1}.block`;
  const outputs = inputs / 2;
  const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
    residualUnit(up, weights, `${prefix}.${unit + 2}.block`, outputs, dilation),
  );
  return {
    alpha: alpha(up, weights, `${prefix}.0`),
    upsample: transposed(up, weights, `${prefix}.1`, { inputs, outputs, kernel: 2 * rate }, rate),
    rate,
    units,
  };
}

function quantizer(up: Uploader, weights: CodecWeights, config: CodecConfig): DeviceQuantizer {
  const codebook = (name: string) => ({
    entries: weight(weights, `${name}.codebook.weight`),
    outWeight: weight(weights, `${name}.out_proj.weight`),
    outBias: weight(weights, `${name}.out_proj.bias`),
  });
  const residual = Array.from({ length: config.residualCodebooks }, (_, index) => codebook(codebookPrefix(index + 1)));
  const tables = quantizerTables(codebook(codebookPrefix(0)), residual, {
    latent: config.latentDim,
    codebookDim: config.codebookDim,
    semanticSize: config.semanticCodebookSize,
    residualSize: config.residualCodebookSize,
  });
  return {
    semanticEntries: up.floats(tables.semanticEntries, 'semantic codebook'),
    residualEntries: up.floats(tables.residualEntries, 'residual codebooks'),
    outWeights: up.floats(tables.outWeights, 'codebook out_proj weights'),
    outBiases: up.floats(tables.outBiases, 'codebook out_proj biases'),
  };
}

/** Uploads everything decode needs (or, sizeOnly, allocates its bytes); frees what it made if any upload fails. */
export function uploadDecodeWeights(
  cuda: CudaContext,
  config: CodecConfig,
  weights: CodecWeights,
  precision: CodecPrecision,
  sizeOnly = false,
): DeviceDecodeWeights {
  const up = new Uploader(cuda, precision, sizeOnly);
  const free = () => {
    for (const allocation of up.allocations) allocation.free();
    up.allocations.length = 0;
  };
  try {
    const resamples = [...config.quantizerFactors]
      .reverse()
      .map((factor, index) => resample(up, weights, index, config, factor));
    let width = config.decoderDim;
    const blocks = config.decoderRates.map((rate, index) => {
      const block = decoderBlock(up, weights, index, width, rate);
      width /= 2;
      return block;
    });
    const tail = config.decoderRates.length + 1;
    const result = {
      precision,
      quantizer: quantizer(up, weights, config),
      postModule: transformer(up, weights, 'quantizer.post_module', config.postModule),
      resamples,
      first: conv(up, weights, 'decoder.model.0', { inputs: config.latentDim, outputs: config.decoderDim, kernel: 7 }),
      blocks,
      lastAlpha: up.floats(weight(weights, `decoder.model.${tail}.alpha`), 'decoder tail alpha'),
      last: conv(up, weights, `decoder.model.${tail + 1}`, { inputs: width, outputs: 1, kernel: 7 }),
    };
    const bytes = up.allocations.reduce((total, allocation) => total + allocation.bytes, 0);
    return { ...result, bytes, free };
  } catch (error) {
    free();
    throw error;
  }
}
