// Host arrays on their way to and from device tensors: which typed array holds each dtype's stored bits (fromHost
// refuses another), and device elements decoded to doubles (toHost: tests and debugging).
import { DramaError } from '../../errors.ts';
import { bf16BitsToFloat32, e4m3BitsToFloat32, f16BitsToFloat32 } from '../../numeric/dtypes.ts';
import type { DType, HostElements } from '../types.ts';

type HostArrayKind = 'Uint16Array' | 'Uint8Array' | 'Float32Array' | 'Int32Array';

const HOST_ARRAY: Record<DType, HostArrayKind> = {
  bf16: 'Uint16Array',
  f16: 'Uint16Array',
  e4m3: 'Uint8Array',
  f32: 'Float32Array',
  i32: 'Int32Array',
};

function kindOf(elements: HostElements): string {
  return elements.constructor.name;
}

/** Refuses host elements whose array does not hold `dtype`'s stored form (their bytes would be misread). */
export function requireHostArray(dtype: DType, elements: HostElements): void {
  const expected = HOST_ARRAY[dtype];
  if (expected === undefined || kindOf(elements) !== expected) {
    throw new DramaError(
      'TENSOR_DTYPE_MISMATCH',
      `a ${dtype} tensor is made from a ${expected ?? 'known'} of its stored bits, got a ${kindOf(elements)}`,
      { kind: 'internal' },
    );
  }
}

/** A host array of `count` elements of `dtype`'s stored form. */
export function hostArrayFor(dtype: DType, count: number): HostElements {
  switch (HOST_ARRAY[dtype]) {
    case 'Uint16Array':
      return new Uint16Array(count);
    case 'Uint8Array':
      return new Uint8Array(count);
    case 'Float32Array':
      return new Float32Array(count);
    default:
      return new Int32Array(count);
  }
}

/** The stored elements of a `dtype` tensor as doubles. */
export function decodeElements(dtype: DType, stored: HostElements): Float64Array {
  const out = new Float64Array(stored.length);
  const decode =
    dtype === 'bf16'
      ? bf16BitsToFloat32
      : dtype === 'f16'
        ? f16BitsToFloat32
        : dtype === 'e4m3'
          ? e4m3BitsToFloat32
          : (value: number) => value;
  for (let i = 0; i < stored.length; i++) out[i] = decode(stored[i]!);
  return out;
}
