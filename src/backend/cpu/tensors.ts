// Cpu tensor storage: weights keep their checkpoint bits (bf16/f16 as Uint16Array, e4m3 as Uint8Array, f32 as
// Float32Array) and are widened per use, exactly, into fp32 scratch; activations and state live in the precision
// policy's float arrays (bf16 values held in Float32Array in bf16 mode); tables and records are Int32Array.

import { DramaError } from '../../errors.ts';
import { e4m3ValueTable, f16ValueTable } from '../../numeric/dtypes.ts';
import type { FloatArray } from '../../numeric/float-array.ts';
import type { Tensor } from '../types.ts';

export type CpuBuffer = Float32Array | Float64Array | Uint16Array | Uint8Array | Int32Array;
export type CpuTensor = Tensor<CpuBuffer>;

/** A reusable fp32 row with an integer view of the same bytes, for widening bf16 bits without per-element casts. */
export interface WideRow {
  readonly floats: Float32Array;
  readonly words: Uint32Array;
}

export function wideRow(count: number): WideRow {
  const floats = new Float32Array(count);
  return { floats, words: new Uint32Array(floats.buffer) };
}

function unsupported(tensor: CpuTensor): never {
  throw new DramaError('TENSOR_DTYPE_UNSUPPORTED', `the cpu backend cannot read a ${tensor.dtype} tensor as floats`, {
    kind: 'internal',
  });
}

/** Writes elements [offset, offset + count) of a float tensor into row.floats[0..count), exactly. */
export function widenToRow(tensor: CpuTensor, offset: number, count: number, row: WideRow): Float32Array {
  const { floats, words } = row;
  const data = tensor.data;
  switch (tensor.dtype) {
    case 'bf16': {
      const bits = data as Uint16Array;
      for (let i = 0; i < count; i++) words[i] = bits[offset + i]! << 16;
      return floats;
    }
    case 'e4m3': {
      const table = e4m3ValueTable();
      const bytes = data as Uint8Array;
      for (let i = 0; i < count; i++) floats[i] = table[bytes[offset + i]!]!;
      return floats;
    }
    case 'f16': {
      const table = f16ValueTable();
      const bits = data as Uint16Array;
      for (let i = 0; i < count; i++) floats[i] = table[bits[offset + i]!]!;
      return floats;
    }
    case 'f32':
      if (data instanceof Int32Array || data instanceof Uint16Array || data instanceof Uint8Array) unsupported(tensor);
      for (let i = 0; i < count; i++) floats[i] = data[offset + i]!;
      return floats;
    default:
      return unsupported(tensor);
  }
}

/** Writes elements [offset, offset + count) of a float tensor into target[targetOffset..], exactly. */
export function readFloats(
  tensor: CpuTensor,
  offset: number,
  count: number,
  target: FloatArray,
  targetOffset: number,
  row: WideRow,
): void {
  const data = tensor.data;
  if (data instanceof Float32Array || data instanceof Float64Array) {
    for (let i = 0; i < count; i++) target[targetOffset + i] = data[offset + i]!;
    return;
  }
  const floats = widenToRow(tensor, offset, count, row);
  for (let i = 0; i < count; i++) target[targetOffset + i] = floats[i]!;
}
