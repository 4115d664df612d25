// Page-aligned host memory outside the JavaScript heap (O_DIRECT reads need aligned buffer addresses), and typed
// views of a tensor's stored bits over raw bytes.
import koffi from 'koffi';
import { DramaError } from '../errors.ts';
import type { DType, HostElements } from './types.ts';

const PAGE_BYTES = 4096;

/** `count` page-aligned buffers of `bytes` each, carved from one allocation freed by free(). */
export function alignedHostBuffers(count: number, bytes: number): { buffers: Uint8Array[]; free(): void } {
  const raw = koffi.alloc('uint8', count * bytes + PAGE_BYTES);
  const address = BigInt(koffi.address(raw) as bigint | number);
  const lead = Number((BigInt(PAGE_BYTES) - (address % BigInt(PAGE_BYTES))) % BigInt(PAGE_BYTES));
  const whole = koffi.view(raw, count * bytes + PAGE_BYTES);
  const buffers = Array.from({ length: count }, (_, index) => new Uint8Array(whole, lead + index * bytes, bytes));
  let freed = false;
  return {
    buffers,
    free() {
      if (freed) return;
      freed = true;
      koffi.free(raw);
    },
  };
}

const ELEMENT_VIEWS: Record<
  DType,
  { bytes: number; make: (buffer: ArrayBuffer, offset: number, count: number) => HostElements }
> = {
  bf16: { bytes: 2, make: (buffer, offset, count) => new Uint16Array(buffer, offset, count) },
  f16: { bytes: 2, make: (buffer, offset, count) => new Uint16Array(buffer, offset, count) },
  e4m3: { bytes: 1, make: (buffer, offset, count) => new Uint8Array(buffer, offset, count) },
  f32: { bytes: 4, make: (buffer, offset, count) => new Float32Array(buffer, offset, count) },
  i32: { bytes: 4, make: (buffer, offset, count) => new Int32Array(buffer, offset, count) },
};

/** Bytes of one stored element of `dtype`. */
export function storedElementBytes(dtype: DType): number {
  return ELEMENT_VIEWS[dtype].bytes;
}

/** `count` stored elements of `dtype` over `bytes` from byte `offset`, sharing them. */
export function storedElementsView(bytes: Uint8Array, offset: number, dtype: DType, count: number): HostElements {
  const view = ELEMENT_VIEWS[dtype];
  const start = bytes.byteOffset + offset;
  if (start % view.bytes !== 0 || offset + count * view.bytes > bytes.byteLength) {
    throw new DramaError('TENSOR_VIEW_MISALIGNED', `${count} ${dtype} elements do not fit at byte ${offset}`, {
      kind: 'internal',
    });
  }
  return view.make(bytes.buffer as ArrayBuffer, start, count);
}
