// Emits pickle protocol 2 opcode by opcode: just what a tensor state dict needs (the inverse of pickle-reader.ts).
// No memo: every value is written where it is used, which Python's and torch's unpicklers both accept.
import { Op } from './pickle-opcodes.ts';

const encoder = new TextEncoder();

export class PickleWriter {
  private readonly chunks: Uint8Array[] = [];

  constructor() {
    this.bytes(Op.PROTO, 2);
  }

  mark(): this {
    return this.bytes(Op.MARK);
  }

  none(): this {
    return this.bytes(Op.NONE);
  }

  boolean(value: boolean): this {
    return this.bytes(value ? Op.NEWTRUE : Op.NEWFALSE);
  }

  /** Any safe integer, in the shortest form (BININT1, BININT2, BININT, else LONG1). */
  integer(value: number): this {
    if (!Number.isSafeInteger(value)) throw new RangeError(`pickle integer ${value} is not a safe integer`);
    if (value >= 0 && value < 0x100) return this.bytes(Op.BININT1, value);
    if (value >= 0 && value < 0x10000) return this.bytes(Op.BININT2, value & 0xff, value >>> 8);
    if (value >= -0x80000000 && value < 0x80000000) {
      const body = new Uint8Array(4);
      new DataView(body.buffer).setInt32(0, value, true);
      return this.bytes(Op.BININT, ...body);
    }
    // LONG1: little-endian two's complement, as few bytes as keep the sign.
    const body: number[] = [];
    let rest = BigInt(value);
    do {
      body.push(Number(rest & 0xffn));
      rest >>= 8n;
    } while (
      !(
        (rest === 0n && (body[body.length - 1]! & 0x80) === 0) ||
        (rest === -1n && (body[body.length - 1]! & 0x80) !== 0)
      )
    );
    return this.bytes(Op.LONG1, body.length, ...body);
  }

  string(value: string): this {
    const text = encoder.encode(value);
    const header = new Uint8Array(5);
    header[0] = Op.BINUNICODE;
    new DataView(header.buffer).setUint32(1, text.byteLength, true);
    this.chunks.push(header, text);
    return this;
  }

  /** GLOBAL `module\nname\n`. */
  global(module: string, name: string): this {
    this.bytes(Op.GLOBAL);
    this.chunks.push(encoder.encode(`${module}\n${name}\n`));
    return this;
  }

  emptyTuple(): this {
    return this.bytes(Op.EMPTY_TUPLE);
  }

  /** Closes a tuple of everything since the last mark(). */
  tuple(): this {
    return this.bytes(Op.TUPLE);
  }

  /** A tuple of small integers (a shape or a stride). */
  integerTuple(values: readonly number[]): this {
    if (values.length === 0) return this.emptyTuple();
    this.mark();
    for (const value of values) this.integer(value);
    return this.tuple();
  }

  emptyDict(): this {
    return this.bytes(Op.EMPTY_DICT);
  }

  /** Sets the key/value pairs pushed since the last mark() into the dict below the mark. */
  setItems(): this {
    return this.bytes(Op.SETITEMS);
  }

  /** Calls the callable below the argument tuple on the stack. */
  reduce(): this {
    return this.bytes(Op.REDUCE);
  }

  /** Replaces the id on the stack by the object the loader's persistent_load returns for it. */
  persistentId(): this {
    return this.bytes(Op.BINPERSID);
  }

  /** Ends the pickle and returns all its bytes. */
  finish(): Uint8Array {
    this.bytes(Op.STOP);
    const total = this.chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
    const out = new Uint8Array(total);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }

  private bytes(...values: number[]): this {
    this.chunks.push(Uint8Array.from(values));
    return this;
  }
}
