// The codec's encode weights on the device, laid out once for the kernels as device-weights.ts lays out the decode's:
// the first conv, the encoder blocks (residual units; the down conv K = 2s regrouped to 2 taps over s·C channels,
// strided-conv.ts; the windowed transformer of the last block), Snake and the conv k3, the downsample stages (conv
// K = s regrouped to one tap, ConvNeXt), the pre-module, and the quantizer's encode tables. Names follow weights.ts.
import type { CudaContext } from '../../backend/cuda/context.ts';
import type { DevicePointer } from '../../backend/cuda/driver.ts';
import type { CodecPrecision } from '../../backend/cuda/ops/codecConv.ts';
import { type CodecQuantizerEncodeTables, quantizerEncodeTables } from '../../backend/cuda/ops/codecQuantize.ts';
import { codecConvWeightLayout } from '../../backend/cuda/ops/codecWeightLayout.ts';
import { RESIDUAL_DILATIONS } from '../blocks.ts';
import type { CodecConfig } from '../config.ts';
import { codebookPrefix, codebookSize, normalisedEntries } from '../quantizer.ts';
import { type CodecWeights, weight } from '../weights.ts';
import {
  alpha,
  conv,
  convNeXt,
  type DeviceConv,
  type DeviceConvNeXt,
  type DeviceResidualUnit,
  type DeviceTransformer,
  residualUnit,
  transformer,
  Uploader,
} from './device-weights.ts';
import { regroupedAlpha, regroupedConvWeight, regroupedKernel, type StridedConvShape } from './strided-conv.ts';

export interface DeviceEncoderBlock {
  /** At the block's input width. */
  readonly units: readonly DeviceResidualUnit[];
  /** Snake's α before the down conv, once per phase of the regrouped rows. */
  readonly downAlpha: DevicePointer;
  /** The down conv regrouped: stride · inputs channels, 2 taps. */
  readonly down: DeviceConv;
  readonly stride: number;
  readonly transformer?: DeviceTransformer;
}

export interface DeviceDownsample extends DeviceConvNeXt {
  /** The conv K = s = factor regrouped: factor · latent channels, one tap. */
  readonly down: DeviceConv;
  readonly factor: number;
}

export interface DeviceEncodeWeights {
  readonly precision: CodecPrecision;
  readonly first: DeviceConv;
  readonly blocks: readonly DeviceEncoderBlock[];
  readonly tailAlpha: DevicePointer;
  readonly tail: DeviceConv;
  readonly downsamples: readonly DeviceDownsample[];
  readonly preModule: DeviceTransformer;
  readonly quantizer: CodecQuantizerEncodeTables;
  /** Device bytes the weights hold. */
  readonly bytes: number;
  free(): void;
}

/** A strided conv `name` uploaded in its regrouped form (strided-conv.ts). */
function stridedConv(up: Uploader, weights: CodecWeights, name: string, shape: StridedConvShape): DeviceConv {
  const kernel = regroupedKernel(shape);
  const inputs = shape.stride * shape.inputs;
  const folded = weight(weights, `${name}.conv.weight`);
  const lay = () => codecConvWeightLayout(regroupedConvWeight(folded, shape), shape.outputs, inputs, kernel);
  return {
    inputs,
    outputs: shape.outputs,
    kernel,
    weight: up.laid(folded.length, lay, `${name}.conv.weight`),
    bias: up.floats(weight(weights, `${name}.conv.bias`), `${name}.conv.bias`),
  };
}

function encoderBlock(
  up: Uploader,
  weights: CodecWeights,
  config: CodecConfig,
  index: number,
  half: number,
): DeviceEncoderBlock {
  const stride = config.encoderStrides[index]!;
  const prefix = `encoder.block.${index + 1}.block`;
  const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
    residualUnit(up, weights, `${prefix}.${unit}.block`, half, dilation),
  );
  const snake = weight(weights, `${prefix}.3.alpha`);
  const last = index === config.encoderStrides.length - 1;
  const shape = { inputs: half, outputs: 2 * half, kernel: 2 * stride, stride };
  return {
    units,
    downAlpha: up.floats(regroupedAlpha(snake, stride), `${prefix}.3.alpha regrouped`),
    down: stridedConv(up, weights, `${prefix}.4`, shape),
    stride,
    ...(last ? { transformer: transformer(up, weights, `${prefix}.5`, config.encoderTransformer) } : {}),
  };
}

function encodeTables(up: Uploader, weights: CodecWeights, config: CodecConfig): CodecQuantizerEncodeTables {
  const { codebookDim: dim } = config;
  const codebook = (prefix: string, size: number) => {
    const entries = weight(weights, `${prefix}.codebook.weight`);
    return {
      entries,
      ...normalisedEntries(entries, size, dim),
      inWeight: weight(weights, `${prefix}.in_proj.weight`),
      inBias: weight(weights, `${prefix}.in_proj.bias`),
      outWeight: weight(weights, `${prefix}.out_proj.weight`),
      outBias: weight(weights, `${prefix}.out_proj.bias`),
    };
  };
  const codebooks = Array.from({ length: 1 + config.residualCodebooks }, (_, index) =>
    codebook(codebookPrefix(index), codebookSize(config, index)),
  );
  const tables = quantizerEncodeTables(codebooks, {
    latent: config.latentDim,
    codebookDim: dim,
    semanticSize: config.semanticCodebookSize,
    residualSize: config.residualCodebookSize,
  });
  return {
    inWeights: up.floats(tables.inWeights, 'codebook in_proj weights'),
    inBiases: up.floats(tables.inBiases, 'codebook in_proj biases'),
    entries: up.floats(tables.entries, 'codebook entries'),
    normalised: up.floats(tables.normalised, 'normalised codebook entries'),
    squares: up.doubles(tables.squares, 'normalised codebook entry squares'),
    outWeights: up.floats(tables.outWeights, 'codebook out_proj weights'),
    outBiases: up.floats(tables.outBiases, 'codebook out_proj biases'),
  };
}

/** Uploads everything encode needs (or, sizeOnly, allocates its bytes); frees what it made if any upload fails. */
export function uploadEncodeWeights(
  cuda: CudaContext,
  config: CodecConfig,
  weights: CodecWeights,
  precision: CodecPrecision,
  sizeOnly = false,
): DeviceEncodeWeights {
  const up = new Uploader(cuda, precision, sizeOnly);
  const free = () => {
    for (const allocation of up.allocations) allocation.free();
    up.allocations.length = 0;
  };
  try {
    const latent = config.latentDim;
    const first = conv(up, weights, 'encoder.block.0', { inputs: 1, outputs: config.encoderDim, kernel: 7 });
    let width = config.encoderDim;
    const blocks = config.encoderStrides.map((_, index) => {
      const block = encoderBlock(up, weights, config, index, width);
      width *= 2;
      return block;
    });
    const tail = config.encoderStrides.length + 1;
    const downsamples = config.quantizerFactors.map((factor, index) => ({
      down: stridedConv(up, weights, `quantizer.downsample.${index}.0`, {
        inputs: latent,
        outputs: latent,
        kernel: factor,
        stride: factor,
      }),
      factor,
      ...convNeXt(up, weights, `quantizer.downsample.${index}.1`, config),
    }));
    const result = {
      precision,
      first,
      blocks,
      tailAlpha: alpha(up, weights, `encoder.block.${tail}`),
      tail: conv(up, weights, `encoder.block.${tail + 1}`, { inputs: width, outputs: latent, kernel: 3 }),
      downsamples,
      preModule: transformer(up, weights, 'quantizer.pre_module', config.preModule),
      quantizer: encodeTables(up, weights, config),
    };
    const bytes = up.allocations.reduce((total, allocation) => total + allocation.bytes, 0);
    return { ...result, bytes, free };
  } catch (error) {
    free();
    throw error;
  }
}
