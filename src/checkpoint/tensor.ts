// Host tensors as checkpoints hold them: a dtype, a row-major shape and the raw little-endian bytes.
// Elements are read as stored (tensorElements) or widened to float32 (exact for every float dtype); narrowing rounds
// to nearest even (see dtypes.ts).
import type { FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import { DramaError } from '../errors.ts';
import {
  e4m3ValueTable,
  f16ValueTable,
  float32ToBf16Bits,
  float32ToE4m3Bits,
  float32ToF16Bits,
} from '../numeric/dtypes.ts';

export type DType = 'BF16' | 'F16' | 'F32' | 'F8_E4M3' | 'I64' | 'I32' | 'U8';
export type FloatDType = 'BF16' | 'F16' | 'F32' | 'F8_E4M3';

export interface HostTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Raw little-endian element bytes, row-major, exactly elementCount(shape) × dtypeByteSize(dtype) long. */
  readonly data: Uint8Array;
}

const byteSizes: Record<DType, number> = { BF16: 2, F16: 2, F32: 4, F8_E4M3: 1, I64: 8, I32: 4, U8: 1 };

// Typed-array views below read the host's native order; every supported host is little-endian, as the files are.
if (endianness() !== 'LE')
  throw new DramaError('HOST_BIG_ENDIAN', 'checkpoints need a little-endian host', { kind: 'internal' });

export function isDType(value: string): value is DType {
  return Object.hasOwn(byteSizes, value);
}

export function dtypeByteSize(dtype: DType): number {
  return byteSizes[dtype];
}

/** Product of the dimensions (1 for a scalar's empty shape). */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dimension of shape) count *= dimension;
  return count;
}

export function tensorByteLength(dtype: DType, shape: readonly number[]): number {
  return elementCount(shape) * byteSizes[dtype];
}

/** Builds a HostTensor after checking that the bytes match the shape. */
export function makeTensor(dtype: DType, shape: readonly number[], data: Uint8Array): HostTensor {
  for (const dimension of shape) {
    if (!Number.isSafeInteger(dimension) || dimension < 0) {
      throw new DramaError('TENSOR_BAD_SHAPE', `shape [${shape.join(', ')}] has a dimension that is not a count`);
    }
  }
  const expected = tensorByteLength(dtype, shape);
  if (data.byteLength !== expected) {
    throw new DramaError(
      'TENSOR_SIZE_MISMATCH',
      `${dtype} tensor of shape [${shape.join(', ')}] needs ${expected} bytes, got ${data.byteLength}`,
    );
  }
  return { dtype, shape: [...shape], data };
}

/** A typed view over the bytes when they are aligned for it, else over an aligned copy. */
function alignedView<T>(
  data: Uint8Array,
  elementBytes: number,
  make: (buffer: ArrayBufferLike, offset: number, length: number) => T,
): T {
  const length = data.byteLength / elementBytes;
  if (data.byteOffset % elementBytes === 0) return make(data.buffer, data.byteOffset, length);
  return make(data.slice().buffer, 0, length);
}

/** The elements as stored, without widening: bf16/f16 bits as Uint16Array, e4m3 bits as Uint8Array, F32 and I32 as
 *  themselves (a view over the bytes when aligned). This is how weights stay in their checkpoint dtype in memory. */
export function tensorElements(t: HostTensor): Float32Array | Uint16Array | Uint8Array | Int32Array {
  switch (t.dtype) {
    case 'F32':
      return alignedView(t.data, 4, (b, o, n) => new Float32Array(b, o, n));
    case 'BF16':
    case 'F16':
      return alignedView(t.data, 2, (b, o, n) => new Uint16Array(b, o, n));
    case 'F8_E4M3':
    case 'U8':
      return t.data;
    case 'I32':
      return alignedView(t.data, 4, (b, o, n) => new Int32Array(b, o, n));
    default:
      throw new DramaError('TENSOR_NOT_STORABLE', `a ${t.dtype} tensor has no in-memory element form`, {
        kind: 'internal',
      });
  }
}

export function tensorToFloat32(t: HostTensor): Float32Array {
  // F32 is already the result: a view over the tensor's bytes (a copy only when they are not 4-byte aligned), which
  // saves a second allocation and copy of every codec weight (1.5 GB at the real geometry) at load.
  if (t.dtype === 'F32') return alignedView(t.data, 4, (b, o, n) => new Float32Array(b, o, n));
  const count = elementCount(t.shape);
  const out = new Float32Array(count);
  switch (t.dtype) {
    case 'BF16': {
      const source = alignedView(t.data, 2, (b, o, n) => new Uint16Array(b, o, n));
      const outBits = new Uint32Array(out.buffer);
      for (let index = 0; index < count; index++) outBits[index] = source[index]! << 16;
      return out;
    }
    case 'F16': {
      const source = alignedView(t.data, 2, (b, o, n) => new Uint16Array(b, o, n));
      const table = f16ValueTable();
      for (let index = 0; index < count; index++) out[index] = table[source[index]!]!;
      return out;
    }
    case 'F8_E4M3': {
      const table = e4m3ValueTable();
      for (let index = 0; index < count; index++) out[index] = table[t.data[index]!]!;
      return out;
    }
    default:
      throw new DramaError('TENSOR_NOT_FLOAT', `tensorToFloat32 takes a float tensor, got ${t.dtype}`, {
        kind: 'internal',
      });
  }
}

/** The element count of `shape`, which `values` must hold exactly. */
function valueCountFor(shape: readonly number[], values: ArrayLike<number>): number {
  const count = elementCount(shape);
  if (values.length !== count) {
    throw new DramaError(
      'TENSOR_SIZE_MISMATCH',
      `shape [${shape.join(', ')}] holds ${count} elements, got ${values.length} values`,
    );
  }
  return count;
}

export function float32ToTensor(values: Float32Array, dtype: FloatDType, shape: readonly number[]): HostTensor {
  const count = valueCountFor(shape, values);
  const data = new Uint8Array(count * byteSizes[dtype]);
  switch (dtype) {
    case 'F32':
      new Float32Array(data.buffer).set(values);
      break;
    case 'BF16': {
      const bits = new Uint16Array(data.buffer);
      for (let index = 0; index < count; index++) bits[index] = float32ToBf16Bits(values[index]!);
      break;
    }
    case 'F16': {
      const bits = new Uint16Array(data.buffer);
      for (let index = 0; index < count; index++) bits[index] = float32ToF16Bits(values[index]!);
      break;
    }
    case 'F8_E4M3':
      for (let index = 0; index < count; index++) data[index] = float32ToE4m3Bits(values[index]!);
      break;
  }
  return makeTensor(dtype, shape, data);
}

/** Integer tensors (I64, I32, U8) as Int32Array; refuses I64 values outside the int32 range. */
export function tensorToInt32(t: HostTensor): Int32Array {
  const count = elementCount(t.shape);
  switch (t.dtype) {
    case 'I32':
      return Int32Array.from(alignedView(t.data, 4, (b, o, n) => new Int32Array(b, o, n)));
    case 'U8':
      return Int32Array.from(t.data);
    case 'I64': {
      const source = alignedView(t.data, 8, (b, o, n) => new BigInt64Array(b, o, n));
      const out = new Int32Array(count);
      for (let index = 0; index < count; index++) {
        const value = source[index]!;
        if (value < -2147483648n || value > 2147483647n) {
          throw new DramaError('TENSOR_VALUE_OUT_OF_RANGE', `I64 element ${index} = ${value} does not fit in int32`, {
            kind: 'bad_checkpoint',
          });
        }
        out[index] = Number(value);
      }
      return out;
    }
    default:
      throw new DramaError('TENSOR_NOT_INTEGER', `tensorToInt32 takes an integer tensor, got ${t.dtype}`, {
        kind: 'internal',
      });
  }
}

/** An integer tensor from int32 values (I64 widens, U8 must be in 0..255). */
export function int32ToTensor(
  values: ArrayLike<number>,
  dtype: 'I64' | 'I32' | 'U8',
  shape: readonly number[],
): HostTensor {
  const count = valueCountFor(shape, values);
  const data = new Uint8Array(count * byteSizes[dtype]);
  if (dtype === 'I64') {
    const out = new BigInt64Array(data.buffer);
    for (let index = 0; index < count; index++) out[index] = BigInt(values[index]!);
  } else if (dtype === 'I32') {
    new Int32Array(data.buffer).set(values);
  } else {
    for (let index = 0; index < count; index++) {
      const value = values[index]!;
      if (!Number.isInteger(value) || value < 0 || value > 255) {
        throw new DramaError('TENSOR_VALUE_OUT_OF_RANGE', `U8 element ${index} = ${value} is not in 0..255`);
      }
      data[index] = value;
    }
  }
  return makeTensor(dtype, shape, data);
}

/** Largest single read: fs reads cap near 2 GiB, so bigger tensors are read in pieces. */
const MAX_READ_BYTES = 1 << 30;

/** Fills `target` from `handle` starting at byte `position`; a file that ends early is a named refusal. */
export async function readFileRange(
  handle: FileHandle,
  target: Uint8Array,
  position: number,
  source: string,
): Promise<void> {
  let done = 0;
  while (done < target.byteLength) {
    const length = Math.min(MAX_READ_BYTES, target.byteLength - done);
    const { bytesRead } = await handle.read(target, done, length, position + done);
    if (bytesRead === 0) {
      throw new DramaError(
        'CHECKPOINT_TRUNCATED',
        `${source} ends at byte ${position + done}, before the ${target.byteLength} bytes read from byte ${position}`,
        { kind: 'bad_checkpoint', param: source },
      );
    }
    done += bytesRead;
  }
}
