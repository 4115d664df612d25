// A complete random codec state dict for `config` (names and shapes of weights.ts, weight norm as weight_g/weight_v
// pairs like a real codec.pth), deterministic for a seed. Scales keep activations O(1): conv and linear weights are
// normal / sqrt(fan-in), residual-unit convs at half that, g set to ‖v‖ times U(0.5, 1.5) so folding matters, and the
// last conv small so that tanh is rarely saturated. Synthetic weights produce noise, not speech.
import { float32ToTensor, type HostTensor } from '../checkpoint/tensor.ts';
import type { CodecConfig } from './config.ts';
import { type CodecTensorSpec, codecTensorSpecs } from './weights.ts';

/** Mulberry32 uniform in [0, 1) plus Box–Muller normals. */
class Random {
  private state: number;
  private spare: number | undefined;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  uniform(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  normal(): number {
    if (this.spare !== undefined) {
      const value = this.spare;
      this.spare = undefined;
      return value;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - this.uniform()));
    const angle = 2 * Math.PI * this.uniform();
    this.spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }
}

const TRANSPOSED = [/^decoder\.model\.\d+\.block\.1\.conv\.weight$/, /^quantizer\.upsample\.\d+\.0\.conv\.weight$/];
const RESIDUAL_UNIT_CONV = /\.block\.\d+\.block\.[13]\.conv\.weight$/;

/** Inputs summed into one output of a weight tensor (transposed convs: input channels × overlapping taps). */
function fanIn(spec: CodecTensorSpec): number {
  const [rows = 1, columns = 1, kernel = 1] = spec.shape;
  if (TRANSPOSED.some((pattern) => pattern.test(spec.name))) return rows * Math.min(2, kernel);
  return columns * kernel;
}

function weightScale(spec: CodecTensorSpec, config: CodecConfig): number {
  const last = `decoder.model.${config.decoderRates.length + 2}.conv.weight`;
  const gain = spec.name === last ? 0.3 : RESIDUAL_UNIT_CONV.test(spec.name) ? 0.5 : 1;
  return gain / Math.sqrt(fanIn(spec));
}

function fill(count: number, draw: () => number): Float32Array {
  const values = new Float32Array(count);
  for (let index = 0; index < count; index++) values[index] = draw();
  return values;
}

function randomValues(spec: CodecTensorSpec, config: CodecConfig, random: Random): Float32Array {
  const count = spec.shape.reduce((total, size) => total * size, 1);
  const name = spec.name;
  if (name.endsWith('.bias')) return fill(count, () => 0.05 * random.normal());
  if (name.endsWith('.alpha')) return fill(count, () => 0.5 + random.uniform());
  if (name.endsWith('.gamma')) return fill(count, () => 0.1 + 0.4 * random.uniform());
  if (name.endsWith('.codebook.weight')) return fill(count, () => random.normal());
  if (spec.shape.length === 1) return fill(count, () => 1 + 0.1 * random.normal());
  const scale = weightScale(spec, config);
  return fill(count, () => scale * random.normal());
}

/** Random codec weights in the names and shapes `loadCodecWeights(config)` expects; same seed, same bytes. */
export function synthesizeCodecWeights(config: CodecConfig, seed: number): Map<string, HostTensor> {
  const random = new Random(seed);
  const tensors = new Map<string, HostTensor>();
  for (const spec of codecTensorSpecs(config)) {
    const values = randomValues(spec, config, random);
    if (!spec.weightNorm) {
      tensors.set(spec.name, float32ToTensor(values, 'F32', spec.shape));
      continue;
    }
    const base = spec.name.slice(0, -'.weight'.length);
    const rows = spec.shape[0]!;
    const rowSize = values.length / rows;
    const g = new Float32Array(rows);
    for (let row = 0; row < rows; row++) {
      let sumOfSquares = 0;
      for (let index = row * rowSize; index < (row + 1) * rowSize; index++) sumOfSquares += values[index]! ** 2;
      g[row] = Math.sqrt(sumOfSquares) * (0.5 + random.uniform());
    }
    const gShape = [rows, ...spec.shape.slice(1).map(() => 1)];
    tensors.set(`${base}.weight_g`, float32ToTensor(g, 'F32', gShape));
    tensors.set(`${base}.weight_v`, float32ToTensor(values, 'F32', spec.shape));
  }
  return tensors;
}

/** Bytes of the tensors synthesizeCodecWeights(config) returns, known without drawing them (F32; g has one per row). */
export function codecWeightBytes(config: CodecConfig): number {
  let bytes = 0;
  for (const spec of codecTensorSpecs(config)) {
    bytes += 4 * spec.shape.reduce((total, size) => total * size, 1);
    if (spec.weightNorm) bytes += 4 * spec.shape[0]!;
  }
  return bytes;
}
