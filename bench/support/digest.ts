// FNV-1a over a typed array's bytes, printed beside GPU results so that two builds' outputs can be compared bit for
// bit across device runs (a kernel change meant to keep the bits must keep the digest).
export function bytesDigest(values: ArrayBufferView): string {
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, '0');
}
