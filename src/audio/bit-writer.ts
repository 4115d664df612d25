// MSB-first bit writer over a growing byte buffer (FLAC's bit order).

export class BitWriter {
  private bytes = new Uint8Array(1 << 16);
  private length = 0;
  /** Bits not yet flushed to `bytes`, right-aligned in `pending`. */
  private pending = 0;
  private pendingBits = 0;

  /** Writes the low `count` bits of `value` (count ≤ 24 per call keeps `pending` inside 32 bits). */
  write(value: number, count: number): void {
    while (count > 24) {
      count -= 16;
      this.write((value / 2 ** count) & 0xffff, 16);
      value = value % 2 ** count;
    }
    this.pending = (this.pending << count) | (value & ((1 << count) - 1));
    this.pendingBits += count;
    while (this.pendingBits >= 8) {
      this.pendingBits -= 8;
      this.pushByte((this.pending >>> this.pendingBits) & 0xff);
    }
    this.pending &= (1 << this.pendingBits) - 1;
  }

  /** Writes `value` as a two's-complement number of `count` bits. */
  writeSigned(value: number, count: number): void {
    this.write(value < 0 ? value + 2 ** count : value, count);
  }

  /** `quotient` zero bits then a one: FLAC's unary code. */
  writeUnary(quotient: number): void {
    while (quotient >= 16) {
      this.write(0, 16);
      quotient -= 16;
    }
    this.write(1, quotient + 1);
  }

  /** Rice code of `value` with parameter k: unary quotient, then the k low bits; one write when it fits. */
  writeRice(value: number, parameter: number): void {
    const quotient = Math.floor(value / 2 ** parameter);
    const total = quotient + 1 + parameter;
    if (total <= 24) {
      this.write((1 << parameter) | (value & ((1 << parameter) - 1)), total);
      return;
    }
    this.writeUnary(quotient);
    if (parameter > 0) this.write(value % 2 ** parameter, parameter);
  }

  /** Pads with zero bits to the next byte boundary. */
  alignToByte(): void {
    if (this.pendingBits > 0) this.write(0, 8 - this.pendingBits);
  }

  get byteLength(): number {
    return this.length;
  }

  /** The bytes written so far (the writer must be byte-aligned). */
  view(start = 0): Uint8Array {
    if (this.pendingBits !== 0) throw new Error('BitWriter.view before alignToByte');
    return this.bytes.subarray(start, this.length);
  }

  private pushByte(byte: number): void {
    if (this.length === this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    this.bytes[this.length++] = byte;
  }
}
