// Cuda tensor storage: a device pointer, the dtype of its elements and how many there are. Weights keep their
// checkpoint bits (bf16 words, e4m3 bytes with f32 block scales); activations are bf16, recurrent state f32, tables
// and records i32. A view is the same allocation at an element offset: nothing is copied.
import { DramaError } from '../../errors.ts';
import type { DType, Tensor } from '../types.ts';
import type { DevicePointer } from './driver.ts';

export interface CudaBuffer {
  readonly pointer: DevicePointer;
  readonly dtype: DType;
  /** Elements the buffer spans from `pointer`. */
  readonly elements: number;
}

export type CudaTensor = Tensor<CudaBuffer>;

const ELEMENT_BYTES: Record<DType, number> = { bf16: 2, f16: 2, f32: 4, e4m3: 1, i32: 4 };

export function elementBytes(dtype: DType): number {
  return ELEMENT_BYTES[dtype];
}

export function shapeElements(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

/** Elements [offset, offset + count) of a buffer, sharing its allocation. */
export function viewBuffer(buffer: CudaBuffer, offset: number, count: number): CudaBuffer {
  if (!Number.isInteger(offset) || !Number.isInteger(count) || offset < 0 || count < 0) {
    throw new DramaError('VIEW_OUT_OF_RANGE', `cannot view ${count} elements at ${offset}`, { kind: 'internal' });
  }
  if (offset + count > buffer.elements) {
    throw new DramaError(
      'VIEW_OUT_OF_RANGE',
      `elements [${offset}, ${offset + count}) lie outside a buffer of ${buffer.elements}`,
      { kind: 'internal' },
    );
  }
  return {
    pointer: buffer.pointer + BigInt(offset * elementBytes(buffer.dtype)),
    dtype: buffer.dtype,
    elements: count,
  };
}

/** Refuses a buffer of another dtype than an op reads (a wrong buffer would be read as garbage on the device). */
export function requireDtype(buffer: CudaBuffer, dtype: DType, name: string): void {
  if (buffer.dtype !== dtype) {
    throw new DramaError('TENSOR_DTYPE_UNSUPPORTED', `${name} must be ${dtype}, got ${buffer.dtype}`, {
      kind: 'internal',
    });
  }
}
