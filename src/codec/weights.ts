// The codec's checkpoint names (the Fish modified-DAC module tree, as `codec.pth` state dicts spell them) and their
// shapes, one tensor per line. Conv weights are [out, in, kernel]; transposed-conv weights are [in, out, kernel];
// linear weights are [out, in]. Weight-normed tensors arrive as `weight_g`/`weight_v` (or the parametrization form
// `parametrizations.weight.original0/1`, or already folded as `weight`) and are folded once here, in fp32.
import { type HostTensor, tensorToFloat32 } from '../checkpoint/tensor.ts';
import { DramaError } from '../errors.ts';
import type { CodecConfig, CodecTransformerConfig } from './config.ts';

/** One declared tensor. `weightNorm` marks a conv weight stored as a (g, v) pair with g over dim 0. */
export interface CodecTensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly weightNorm: boolean;
}

type Specs = CodecTensorSpec[];

const plain = (specs: Specs, name: string, shape: number[]) => specs.push({ name, shape, weightNorm: false });
const normed = (specs: Specs, name: string, shape: number[]) => specs.push({ name, shape, weightNorm: true });

function transformerSpecs(specs: Specs, prefix: string, t: CodecTransformerConfig): void {
  const attentionWidth = t.heads * t.headDim;
  for (let layer = 0; layer < t.layers; layer++) {
    const layerPrefix = `${prefix}.layers.${layer}`;
    plain(specs, `${layerPrefix}.attention.wqkv.weight`, [3 * attentionWidth, t.dim]);
    plain(specs, `${layerPrefix}.attention.wo.weight`, [t.dim, attentionWidth]);
    plain(specs, `${layerPrefix}.feed_forward.w1.weight`, [t.intermediate, t.dim]);
    plain(specs, `${layerPrefix}.feed_forward.w3.weight`, [t.intermediate, t.dim]);
    plain(specs, `${layerPrefix}.feed_forward.w2.weight`, [t.dim, t.intermediate]);
    plain(specs, `${layerPrefix}.attention_norm.weight`, [t.dim]);
    plain(specs, `${layerPrefix}.ffn_norm.weight`, [t.dim]);
    plain(specs, `${layerPrefix}.attention_layer_scale.gamma`, [t.dim]);
    plain(specs, `${layerPrefix}.ffn_layer_scale.gamma`, [t.dim]);
  }
  plain(specs, `${prefix}.norm.weight`, [t.dim]);
}

function convNextSpecs(specs: Specs, prefix: string, dim: number, hidden: number): void {
  plain(specs, `${prefix}.dwconv.conv.weight`, [dim, 1, 7]);
  plain(specs, `${prefix}.dwconv.conv.bias`, [dim]);
  plain(specs, `${prefix}.norm.weight`, [dim]);
  plain(specs, `${prefix}.norm.bias`, [dim]);
  plain(specs, `${prefix}.pwconv1.weight`, [hidden, dim]);
  plain(specs, `${prefix}.pwconv1.bias`, [hidden]);
  plain(specs, `${prefix}.pwconv2.weight`, [dim, hidden]);
  plain(specs, `${prefix}.pwconv2.bias`, [dim]);
  plain(specs, `${prefix}.gamma`, [dim]);
}

function residualUnitSpecs(specs: Specs, prefix: string, dim: number): void {
  plain(specs, `${prefix}.block.0.alpha`, [1, dim, 1]);
  normed(specs, `${prefix}.block.1.conv.weight`, [dim, dim, 7]);
  plain(specs, `${prefix}.block.1.conv.bias`, [dim]);
  plain(specs, `${prefix}.block.2.alpha`, [1, dim, 1]);
  normed(specs, `${prefix}.block.3.conv.weight`, [dim, dim, 1]);
  plain(specs, `${prefix}.block.3.conv.bias`, [dim]);
}

function quantizerSpecs(specs: Specs, prefix: string, count: number, size: number, config: CodecConfig): void {
  for (let index = 0; index < count; index++) {
    const entryPrefix = `${prefix}.quantizers.${index}`;
    normed(specs, `${entryPrefix}.in_proj.weight`, [config.codebookDim, config.latentDim, 1]);
    plain(specs, `${entryPrefix}.in_proj.bias`, [config.codebookDim]);
    normed(specs, `${entryPrefix}.out_proj.weight`, [config.latentDim, config.codebookDim, 1]);
    plain(specs, `${entryPrefix}.out_proj.bias`, [config.latentDim]);
    plain(specs, `${entryPrefix}.codebook.weight`, [size, config.codebookDim]);
  }
}

/** Every tensor a codec checkpoint holds for `config`, in module order. */
export function codecTensorSpecs(config: CodecConfig): CodecTensorSpec[] {
  const specs: Specs = [];
  const latent = config.latentDim;
  // Encoder: conv 1→dim k7, blocks (3 residual units, Snake, strided conv, transformer in the last), Snake, conv k3.
  normed(specs, 'encoder.block.0.conv.weight', [config.encoderDim, 1, 7]);
  plain(specs, 'encoder.block.0.conv.bias', [config.encoderDim]);
  config.encoderStrides.forEach((stride, index) => {
    const width = config.encoderDim * 2 ** (index + 1);
    const blockPrefix = `encoder.block.${index + 1}.block`;
    for (let unit = 0; unit < 3; unit++) residualUnitSpecs(specs, `${blockPrefix}.${unit}`, width / 2);
    plain(specs, `${blockPrefix}.3.alpha`, [1, width / 2, 1]);
    normed(specs, `${blockPrefix}.4.conv.weight`, [width, width / 2, 2 * stride]);
    plain(specs, `${blockPrefix}.4.conv.bias`, [width]);
    if (index === config.encoderStrides.length - 1)
      transformerSpecs(specs, `${blockPrefix}.5`, config.encoderTransformer);
  });
  const encoderWidth = config.encoderDim * 2 ** config.encoderStrides.length;
  const last = config.encoderStrides.length + 1;
  plain(specs, `encoder.block.${last}.alpha`, [1, encoderWidth, 1]);
  normed(specs, `encoder.block.${last + 1}.conv.weight`, [latent, encoderWidth, 3]);
  plain(specs, `encoder.block.${last + 1}.conv.bias`, [latent]);
  // Quantizer: semantic and residual codebooks, down/up-sampling, pre- and post-module transformers.
  quantizerSpecs(specs, 'quantizer.semantic_quantizer', 1, config.semanticCodebookSize, config);
  quantizerSpecs(specs, 'quantizer.quantizer', config.residualCodebooks, config.residualCodebookSize, config);
  config.quantizerFactors.forEach((factor, index) => {
    plain(specs, `quantizer.downsample.${index}.0.conv.weight`, [latent, latent, factor]);
    plain(specs, `quantizer.downsample.${index}.0.conv.bias`, [latent]);
    convNextSpecs(specs, `quantizer.downsample.${index}.1`, latent, config.convNextHidden);
  });
  // Upsample stages run in reverse factor order (upsample.0 undoes the last downsample).
  [...config.quantizerFactors].reverse().forEach((factor, index) => {
    plain(specs, `quantizer.upsample.${index}.0.conv.weight`, [latent, latent, factor]);
    plain(specs, `quantizer.upsample.${index}.0.conv.bias`, [latent]);
    convNextSpecs(specs, `quantizer.upsample.${index}.1`, latent, config.convNextHidden);
  });
  transformerSpecs(specs, 'quantizer.pre_module', config.preModule);
  transformerSpecs(specs, 'quantizer.post_module', config.postModule);
  // Decoder: conv latent→dim k7, blocks (Snake, transposed conv k=2·rate, 3 residual units), Snake, conv →1 k7.
  normed(specs, 'decoder.model.0.conv.weight', [config.decoderDim, latent, 7]);
  plain(specs, 'decoder.model.0.conv.bias', [config.decoderDim]);
  config.decoderRates.forEach((rate, index) => {
    const input = config.decoderDim / 2 ** index;
    const output = input / 2;
    const blockPrefix = `decoder.model.${index + 1}.block`;
    plain(specs, `${blockPrefix}.0.alpha`, [1, input, 1]);
    normed(specs, `${blockPrefix}.1.conv.weight`, [input, output, 2 * rate]);
    plain(specs, `${blockPrefix}.1.conv.bias`, [output]);
    for (let unit = 0; unit < 3; unit++) residualUnitSpecs(specs, `${blockPrefix}.${unit + 2}`, output);
  });
  const decoderOut = config.decoderDim / 2 ** config.decoderRates.length;
  const tail = config.decoderRates.length + 1;
  plain(specs, `decoder.model.${tail}.alpha`, [1, decoderOut, 1]);
  normed(specs, `decoder.model.${tail + 1}.conv.weight`, [1, decoderOut, 7]);
  plain(specs, `decoder.model.${tail + 1}.conv.bias`, [1]);
  return specs;
}

/** Non-parameter buffers that PyTorch state dicts of this module tree may carry and that are not needed here. */
const IGNORED_SUFFIXES = ['.causal_mask'];

/** Prefixes and head widths of the windowed transformers, whose RoPE tables a state dict may carry. */
function codecTransformerPrefixes(config: CodecConfig): [string, CodecTransformerConfig][] {
  return [
    [`encoder.block.${config.encoderStrides.length}.block.5`, config.encoderTransformer],
    ['quantizer.pre_module', config.preModule],
    ['quantizer.post_module', config.postModule],
  ];
}

/**
 * Optional RoPE buffers `<transformer>.freqs_cis` [positions, headDim/2, 2] (cos, sin): the module tree keeps them in
 * its state dict (in the precision it computed them, bf16 for the Fish code), so when present they are used as is for
 * the positions they cover; otherwise the table is computed.
 */
function takeRopeTables(
  tensors: Map<string, HostTensor>,
  used: Set<string>,
  config: CodecConfig,
  weights: Map<string, Float32Array>,
): void {
  for (const [prefix, transformer] of codecTransformerPrefixes(config)) {
    const name = `${prefix}.freqs_cis`;
    const table = tensors.get(name);
    if (table === undefined) continue;
    weights.set(name, take(tensors, used, name, ropeTableShape(table.shape, transformer)));
  }
}

/** The shape a stored RoPE table must have: the positions it covers (at least one), headDim/2 (cos, sin) pairs. */
function ropeTableShape(stored: readonly number[], transformer: CodecTransformerConfig): number[] {
  return [Math.max(stored[0] ?? 0, 1), transformer.headDim / 2, 2];
}

/**
 * The shapes of the folded weights `loadCodecWeights` returns for a state dict with these tensor shapes, when it
 * accepts it: every declared tensor, and the RoPE tables the state dict carries.
 */
export function codecWeightShapes(
  config: CodecConfig,
  stored: ReadonlyMap<string, readonly number[]>,
): Map<string, readonly number[]> {
  const shapes = new Map<string, readonly number[]>(codecTensorSpecs(config).map((spec) => [spec.name, spec.shape]));
  const unwrapped = stripWrapperPrefix(stored);
  for (const [prefix, transformer] of codecTransformerPrefixes(config)) {
    const table = unwrapped.get(`${prefix}.freqs_cis`);
    if (table !== undefined) shapes.set(`${prefix}.freqs_cis`, ropeTableShape(table, transformer));
  }
  return shapes;
}

/** Folded fp32 weights by name (weight-normed tensors under their `.weight` name). */
export type CodecWeights = ReadonlyMap<string, Float32Array>;

function badCheckpoint(code: string, message: string, name: string): DramaError {
  return new DramaError(code, message, { kind: 'bad_checkpoint', param: name });
}

function take(
  tensors: Map<string, HostTensor>,
  used: Set<string>,
  name: string,
  shape: readonly number[],
): Float32Array {
  const tensor = tensors.get(name);
  if (tensor === undefined) throw badCheckpoint('CODEC_TENSOR_MISSING', `codec tensor ${name} is missing`, name);
  if (tensor.shape.length !== shape.length || tensor.shape.some((size, axis) => size !== shape[axis])) {
    throw badCheckpoint(
      'CODEC_TENSOR_SHAPE',
      `codec tensor ${name} has shape [${tensor.shape.join(', ')}], expected [${shape.join(', ')}]`,
      name,
    );
  }
  used.add(name);
  return tensorToFloat32(tensor);
}

/** w = g · v / ‖v‖, the norm taken per index of dim 0 (over all other dims), in fp32 as PyTorch's _weight_norm. */
export function foldWeightNorm(g: Float32Array, v: Float32Array, rows: number): Float32Array {
  const rowSize = v.length / rows;
  const out = new Float32Array(v.length);
  for (let row = 0; row < rows; row++) {
    let sumOfSquares = 0;
    for (let index = row * rowSize; index < (row + 1) * rowSize; index++) sumOfSquares += v[index]! * v[index]!;
    const scale = Math.fround(g[row]! / Math.fround(Math.sqrt(sumOfSquares)));
    for (let index = row * rowSize; index < (row + 1) * rowSize; index++) out[index] = v[index]! * scale;
  }
  return out;
}

function takeWeightNormed(tensors: Map<string, HostTensor>, used: Set<string>, spec: CodecTensorSpec): Float32Array {
  const base = spec.name.slice(0, -'.weight'.length);
  const rows = spec.shape[0]!;
  const gShape = [rows, ...spec.shape.slice(1).map(() => 1)];
  if (tensors.has(`${base}.weight_g`) || tensors.has(`${base}.weight_v`)) {
    const g = take(tensors, used, `${base}.weight_g`, gShape);
    return foldWeightNorm(g, take(tensors, used, `${base}.weight_v`, spec.shape), rows);
  }
  const parametrized = `${base}.parametrizations.weight`;
  if (tensors.has(`${parametrized}.original0`) || tensors.has(`${parametrized}.original1`)) {
    const g = take(tensors, used, `${parametrized}.original0`, gShape);
    return foldWeightNorm(g, take(tensors, used, `${parametrized}.original1`, spec.shape), rows);
  }
  if (tensors.has(spec.name)) return take(tensors, used, spec.name, spec.shape);
  throw badCheckpoint('CODEC_TENSOR_MISSING', `codec tensor ${base}.weight_g / ${base}.weight_v is missing`, spec.name);
}

/** Drops a `generator.` prefix (training checkpoints wrap the codec in a GAN module). */
function stripWrapperPrefix<T>(tensors: ReadonlyMap<string, T>): Map<string, T> {
  const wrapped = [...tensors.keys()].some((name) => name.startsWith('generator.'));
  if (!wrapped) return new Map(tensors);
  const out = new Map<string, T>();
  for (const [name, tensor] of tensors) {
    if (name.startsWith('generator.')) out.set(name.slice('generator.'.length), tensor);
  }
  return out;
}

/**
 * Checks a state dict against `codecTensorSpecs(config)` and folds weight norm. Fails naming the first missing or
 * mis-shaped tensor, or every unused one. `source` names the file in messages.
 */
export function loadCodecWeights(
  state: ReadonlyMap<string, HostTensor>,
  config: CodecConfig,
  source: string,
): CodecWeights {
  const tensors = stripWrapperPrefix(state);
  const used = new Set<string>();
  const weights = new Map<string, Float32Array>();
  try {
    for (const spec of codecTensorSpecs(config)) {
      weights.set(
        spec.name,
        spec.weightNorm ? takeWeightNormed(tensors, used, spec) : take(tensors, used, spec.name, spec.shape),
      );
    }
    takeRopeTables(tensors, used, config, weights);
  } catch (error) {
    if (error instanceof DramaError) error.message = `${source}: ${error.message}`;
    throw error;
  }
  const unused = [...tensors.keys()].filter(
    (name) => !used.has(name) && !IGNORED_SUFFIXES.some((suffix) => name.endsWith(suffix)),
  );
  if (unused.length > 0) {
    const shown = unused.slice(0, 8).join(', ');
    throw badCheckpoint(
      'CODEC_TENSOR_UNUSED',
      `${source}: ${unused.length} codec tensor(s) not used by this codec config: ${shown}${unused.length > 8 ? ', …' : ''}`,
      unused[0]!,
    );
  }
  return weights;
}

/** The folded weight `name`, which the loader has already checked against its declared shape. */
export function weight(weights: CodecWeights, name: string, expectedLength?: number): Float32Array {
  const values = weights.get(name);
  if (values === undefined) {
    throw new DramaError('CODEC_WEIGHT_UNKNOWN', `codec weight ${name} is not declared`, { kind: 'internal' });
  }
  if (expectedLength !== undefined && values.length !== expectedLength) {
    throw new DramaError(
      'CODEC_WEIGHT_SIZE',
      `codec weight ${name} has ${values.length} values, expected ${expectedLength}`,
      {
        kind: 'internal',
      },
    );
  }
  return values;
}
