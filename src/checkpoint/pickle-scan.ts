// Pass 1 of the restricted pickle reader: decodes every opcode and its argument into an instruction list, refusing
// any opcode outside ALLOWED_OPCODES and any global outside the allow-list by name. It builds no object at all:
// STACK_GLOBAL's module and name are followed as plain strings (pushed just before, or fetched from the memo).
import { DramaError } from '../errors.ts';
import { ALLOWED_OPCODES, Op, opcodeName } from './pickle-opcodes.ts';

export interface Instruction {
  readonly opcode: number;
  /** Byte offset of the opcode, for messages. */
  readonly position: number;
  /** The decoded inline argument: a number, bigint, string, bytes, or a global's `module.name`. */
  readonly argument: unknown;
}

export interface ScanOptions {
  /** Qualified names (`module.name`) the pickle may refer to. */
  readonly allowedGlobals: { has(qualifiedName: string): boolean };
  /** Named in error messages (e.g. the checkpoint path). */
  readonly source: string;
}

function fail(code: string, message: string): never {
  throw new DramaError(code, message, { kind: 'bad_checkpoint' });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Pass 1: decodes opcodes and arguments; refuses unknown opcodes and globals by name; builds nothing. */
export function scanPickle(bytes: Uint8Array, options: ScanOptions): Instruction[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const instructions: Instruction[] = [];
  let cursor = 0;
  // Strings just pushed (and memoised strings) name STACK_GLOBAL's module and attribute without running anything.
  let recentStrings: string[] = [];
  const memoStrings = new Map<number, string>();
  const memoSlots = new Set<number>();
  const need = (count: number, position: number): void => {
    if (cursor + count > bytes.byteLength) {
      fail('PICKLE_TRUNCATED', `${options.source}: pickle ends inside the opcode at byte ${position}`);
    }
  };
  const decodeText = (text: Uint8Array, position: number): string => {
    try {
      return utf8.decode(text);
    } catch {
      return fail('PICKLE_BAD_UTF8', `${options.source}: the string at byte ${position} is not valid UTF-8`);
    }
  };
  const readLine = (position: number): string => {
    const end = bytes.indexOf(0x0a, cursor);
    if (end < 0) fail('PICKLE_TRUNCATED', `${options.source}: GLOBAL at byte ${position} has no line end`);
    const text = decodeText(bytes.subarray(cursor, end), position);
    cursor = end + 1;
    return text;
  };
  const readText = (length: number, position: number): string => {
    need(length, position);
    const text = decodeText(bytes.subarray(cursor, cursor + length), position);
    cursor += length;
    return text;
  };
  const checkGlobal = (module: string, name: string, position: number): string => {
    const qualifiedName = `${module}.${name}`;
    if (!options.allowedGlobals.has(qualifiedName)) {
      fail(
        'PICKLE_GLOBAL_REFUSED',
        `${options.source}: the pickle names the global ${qualifiedName} (byte ${position}); only tensor ` +
          'state-dict globals are allowed',
      );
    }
    return qualifiedName;
  };
  const remember = (slot: number): void => {
    memoSlots.add(slot);
    if (recentStrings.length > 0) memoStrings.set(slot, recentStrings[recentStrings.length - 1]!);
  };

  for (;;) {
    const position = cursor;
    need(1, position);
    const opcode = bytes[cursor++]!;
    if (!ALLOWED_OPCODES.has(opcode)) {
      fail(
        'PICKLE_OPCODE_REFUSED',
        `${options.source}: opcode ${opcodeName(opcode)} at byte ${position} is not allowed`,
      );
    }
    let argument: unknown;
    let pushedString: string | undefined;
    let keepsRecent = false;
    switch (opcode) {
      case Op.PROTO:
        need(1, position);
        argument = bytes[cursor++];
        if ((argument as number) > 5) {
          fail('PICKLE_PROTOCOL_UNSUPPORTED', `${options.source}: pickle protocol ${argument} is newer than 5`);
        }
        break;
      case Op.FRAME:
        need(8, position);
        cursor += 8;
        keepsRecent = true;
        break;
      case Op.BININT1:
      case Op.BINPUT:
      case Op.BINGET:
        need(1, position);
        argument = bytes[cursor++];
        break;
      case Op.BININT2:
        need(2, position);
        argument = view.getUint16(cursor, true);
        cursor += 2;
        break;
      case Op.BININT:
        need(4, position);
        argument = view.getInt32(cursor, true);
        cursor += 4;
        break;
      case Op.LONG_BINPUT:
      case Op.LONG_BINGET:
        need(4, position);
        argument = view.getUint32(cursor, true);
        cursor += 4;
        break;
      case Op.LONG1: {
        need(1, position);
        const length = bytes[cursor++]!;
        need(length, position);
        let value = 0n;
        for (let index = length - 1; index >= 0; index--) value = (value << 8n) | BigInt(bytes[cursor + index]!);
        if (length > 0 && bytes[cursor + length - 1]! & 0x80) value -= 1n << BigInt(8 * length);
        cursor += length;
        argument =
          value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
        break;
      }
      case Op.BINFLOAT:
        need(8, position);
        argument = view.getFloat64(cursor, false);
        cursor += 8;
        break;
      case Op.SHORT_BINUNICODE:
        need(1, position);
        argument = pushedString = readText(bytes[cursor++]!, position);
        break;
      case Op.BINUNICODE:
        need(4, position);
        cursor += 4;
        argument = pushedString = readText(view.getUint32(cursor - 4, true), position);
        break;
      case Op.SHORT_BINBYTES:
      case Op.BINBYTES: {
        const lengthBytes = opcode === Op.SHORT_BINBYTES ? 1 : 4;
        need(lengthBytes, position);
        const length = lengthBytes === 1 ? bytes[cursor]! : view.getUint32(cursor, true);
        cursor += lengthBytes;
        need(length, position);
        argument = bytes.slice(cursor, cursor + length);
        cursor += length;
        break;
      }
      case Op.GLOBAL: {
        const module = readLine(position);
        argument = checkGlobal(module, readLine(position), position);
        break;
      }
      case Op.STACK_GLOBAL: {
        if (recentStrings.length < 2) {
          fail(
            'PICKLE_GLOBAL_REFUSED',
            `${options.source}: STACK_GLOBAL at byte ${position} is not named by two strings`,
          );
        }
        argument = checkGlobal(
          recentStrings[recentStrings.length - 2]!,
          recentStrings[recentStrings.length - 1]!,
          position,
        );
        break;
      }
      case Op.MEMOIZE:
        argument = memoSlots.size;
        remember(memoSlots.size);
        keepsRecent = true;
        break;
      default:
        break;
    }
    if (opcode === Op.BINPUT || opcode === Op.LONG_BINPUT) {
      remember(argument as number);
      keepsRecent = true;
    }
    if (opcode === Op.BINGET || opcode === Op.LONG_BINGET) pushedString = memoStrings.get(argument as number);
    if (pushedString !== undefined) recentStrings = [...recentStrings.slice(-1), pushedString];
    else if (!keepsRecent) recentStrings = [];
    instructions.push({ opcode, position, argument });
    if (opcode === Op.STOP) return instructions;
  }
}
