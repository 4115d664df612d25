// Reads named tensors from an open checkpoint for the model loaders. Each tensor's shape comes from the weight map
// (weights.ts), the one place that declares it: the loader checks the file against it and hands the elements to the
// backend as stored (bf16 and e4m3 stay bf16 and e4m3; nothing is widened). An e4m3 linear weight carries its
// 128×128 block scales (`<name>_scale_inv`).

import type { Backend, DType, HostElements, LinearWeight, SwiGluWeights, Tensor } from '../backend/types.ts';
import type { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { type DType as FileDType, tensorElements } from '../checkpoint/tensor.ts';
import { DramaError } from '../errors.ts';
import type { SwiGluNames, TensorSpec } from './weights.ts';

const BACKEND_DTYPES: Partial<Record<FileDType, DType>> = {
  BF16: 'bf16',
  F16: 'f16',
  F32: 'f32',
  F8_E4M3: 'e4m3',
  I32: 'i32',
};

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** A host tensor in its stored form: the backend dtype, the declared shape and the elements. */
export interface StoredTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly elements: HostElements;
}

/** Rows [first, first + count) of a tensor viewed as rows. */
export interface RowBlock {
  readonly first: number;
  readonly count: number;
}

/** What the model loaders read weights through: a checkpoint's tensors (TensorSource, StreamedSource) or tensors
 *  made in place. */
export interface WeightSource<B> {
  readonly backend: Backend<B>;
  has(name: string): boolean;
  tensor(name: string): Promise<Tensor<B>>;
  /** Blocks of rows of a tensor viewed as `rowShape` (the fused experts' split), each as stored. */
  rowBlocks(name: string, rowShape: readonly number[], blocks: readonly RowBlock[]): Promise<Tensor<B>[]>;
  /** The rows `ids` of a [rows, cols] tensor, in that order (a head's candidate rows). */
  rows(name: string, ids: Int32Array): Promise<Tensor<B>>;
  linear(name: string): Promise<LinearWeight<B>>;
  swiGlu(names: SwiGluNames): Promise<SwiGluWeights<B>>;
}

export class TensorSource<B> implements WeightSource<B> {
  private readonly specs: ReadonlyMap<string, TensorSpec>;

  constructor(
    readonly checkpoint: SafetensorsCheckpoint,
    readonly backend: Backend<B>,
    specs: readonly TensorSpec[],
  ) {
    this.specs = new Map(specs.map((spec) => [spec.name, spec]));
  }

  has(name: string): boolean {
    return this.checkpoint.has(name);
  }

  /** The declared shape of a tensor of the weight map. */
  shape(name: string): readonly number[] {
    const spec = this.specs.get(name);
    if (spec === undefined) {
      throw new DramaError('TENSOR_NOT_DECLARED', `tensor ${name} is not in the weight map`, { kind: 'internal' });
    }
    return spec.shape;
  }

  /** The tensor's elements as stored, after checking its shape against the weight map. */
  async stored(name: string): Promise<StoredTensor> {
    const shape = this.shape(name);
    const tensor = await this.checkpoint.read(name);
    const { dtype } = checkedStored({ ...tensor, file: '', fileOffset: 0, byteLength: 0 }, { name, shape });
    return { dtype, shape, elements: tensorElements(tensor) };
  }

  async rowBlocks(name: string, rowShape: readonly number[], blocks: readonly RowBlock[]): Promise<Tensor<B>[]> {
    const stored = await this.stored(name);
    requireRowShape(name, stored.shape, rowShape);
    const rows = { ...stored, shape: rowShape };
    return blocks.map(({ first, count }) => this.upload(storedRows(rows, first, count)));
  }

  async tensor(name: string): Promise<Tensor<B>> {
    return this.upload(await this.stored(name));
  }

  upload(stored: StoredTensor): Tensor<B> {
    return this.backend.fromHost(stored.dtype, stored.shape, stored.elements);
  }

  async rows(name: string, ids: Int32Array): Promise<Tensor<B>> {
    return this.upload(gatherStoredRows(await this.stored(name), ids));
  }

  /** A [out, in] linear weight, with its block scales when the checkpoint stores it as e4m3. */
  async linear(name: string): Promise<LinearWeight<B>> {
    const stored = await this.stored(name);
    if (stored.dtype !== 'e4m3') return this.upload(stored);
    const scales = await this.tensor(`${name}_scale_inv`);
    return { ...this.upload(stored), scales };
  }

  async swiGlu(names: SwiGluNames): Promise<SwiGluWeights<B>> {
    return {
      gate: await this.linear(names.gateProj),
      up: await this.linear(names.upProj),
      down: await this.linear(names.downProj),
    };
  }
}

/** Where a checked tensor's bytes lie, and its backend dtype. */
export interface CheckedTensor {
  readonly dtype: DType;
  readonly file: string;
  readonly fileOffset: number;
  readonly byteLength: number;
}

/** Refuses a file tensor whose shape differs from the weight map's or whose dtype is not a weight dtype. */
export function checkedStored(
  info: { dtype: FileDType; shape: readonly number[]; file: string; fileOffset: number; byteLength: number },
  spec: Pick<TensorSpec, 'name' | 'shape'>,
): CheckedTensor {
  const { name, shape } = spec;
  if (!sameShape(info.shape, shape)) {
    throw new DramaError(
      'TENSOR_SHAPE_MISMATCH',
      `tensor ${name} has shape [${info.shape.join(', ')}], expected [${shape.join(', ')}]`,
      { kind: 'bad_checkpoint', param: name },
    );
  }
  const dtype = BACKEND_DTYPES[info.dtype];
  if (dtype === undefined) {
    throw new DramaError('TENSOR_DTYPE_UNSUPPORTED', `tensor ${name} is ${info.dtype}, not a weight dtype`, {
      kind: 'bad_checkpoint',
      param: name,
    });
  }
  return { dtype, file: info.file, fileOffset: info.fileOffset, byteLength: info.byteLength };
}

/** Refuses a row view that does not hold exactly the tensor's elements. */
export function requireRowShape(name: string, shape: readonly number[], rowShape: readonly number[]): void {
  const count = (dims: readonly number[]) => dims.reduce((product, size) => product * size, 1);
  if (count(shape) !== count(rowShape)) {
    throw new DramaError('TENSOR_VIEW_MISMATCH', `[${rowShape.join(', ')}] does not view tensor ${name} [${shape}]`, {
      kind: 'internal',
    });
  }
}

/** Rows [first, first + count) of a stored [rows, …] tensor, sharing its elements. */
export function storedRows(stored: StoredTensor, first: number, count: number): StoredTensor {
  const width = stored.shape.slice(1).reduce((product, size) => product * size, 1);
  return {
    dtype: stored.dtype,
    shape: [count, ...stored.shape.slice(1)],
    elements: stored.elements.subarray(first * width, (first + count) * width),
  };
}

/** The rows `ids` of a stored [rows, cols] tensor, copied in that order (a table's selected rows, still as stored). */
export function gatherStoredRows(stored: StoredTensor, ids: Int32Array): StoredTensor {
  const cols = stored.shape[1]!;
  const Constructor = stored.elements.constructor as new (length: number) => HostElements;
  const elements = new Constructor(ids.length * cols);
  ids.forEach((id, row) => {
    elements.set(stored.elements.subarray(id * cols, (id + 1) * cols) as never, row * cols);
  });
  return { dtype: stored.dtype, shape: [ids.length, cols], elements };
}
