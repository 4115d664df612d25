// Reads named tensors from an open checkpoint for the model loaders: shape-checked, widened to fp32 (exact for bf16,
// f16 and e4m3), then handed to the backend. Linear weights become LinearWeight handles: dense, or FP8 e4m3 values
// with their 128×128 block scales (`<name>_scale_inv`).

import type { Backend, LinearWeight, SwiGluWeights } from '../backend/types.ts';
import type { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { tensorToFloat32 } from '../checkpoint/tensor.ts';
import { DramaError } from '../errors.ts';
import type { SwiGluNames } from './weights.ts';

export class TensorSource<B> {
  constructor(
    readonly checkpoint: SafetensorsCheckpoint,
    readonly backend: Backend<B>,
  ) {}

  has(name: string): boolean {
    return this.checkpoint.has(name);
  }

  /** The tensor's values in fp32 after checking its shape. */
  async float32(name: string, shape: readonly number[]): Promise<Float32Array> {
    const tensor = await this.checkpoint.read(name);
    const matches =
      tensor.shape.length === shape.length && tensor.shape.every((value, index) => value === shape[index]);
    if (!matches) {
      throw new DramaError(
        'TENSOR_SHAPE_MISMATCH',
        `tensor ${name} has shape [${tensor.shape.join(', ')}], expected [${shape.join(', ')}]`,
        { kind: 'bad_checkpoint', param: name },
      );
    }
    return tensorToFloat32(tensor);
  }

  async vector(name: string, shape: readonly number[]): Promise<B> {
    return this.backend.fromHost(await this.float32(name, shape));
  }

  /** A [out, in] linear weight; FP8 when the checkpoint stores it as F8_E4M3 beside a scale grid. */
  async linear(name: string, outFeatures: number, inFeatures: number): Promise<LinearWeight<B>> {
    const values = await this.vector(name, [outFeatures, inFeatures]);
    if (this.checkpoint.info(name).dtype !== 'F8_E4M3') return { outFeatures, inFeatures, format: 'dense', values };
    const scaleShape = [Math.ceil(outFeatures / 128), Math.ceil(inFeatures / 128)];
    const scales = await this.vector(`${name}_scale_inv`, scaleShape);
    return { outFeatures, inFeatures, format: 'fp8-block', values, scales };
  }

  /** A dense linear weight from rows already in memory. */
  denseFrom(values: Float32Array, outFeatures: number, inFeatures: number): LinearWeight<B> {
    return { outFeatures, inFeatures, format: 'dense', values: this.backend.fromHost(values) };
  }

  async swiGlu(names: SwiGluNames, intermediate: number, hidden: number): Promise<SwiGluWeights<B>> {
    return {
      gate: await this.linear(names.gateProj, intermediate, hidden),
      up: await this.linear(names.upProj, intermediate, hidden),
      down: await this.linear(names.downProj, hidden, intermediate),
    };
  }
}
