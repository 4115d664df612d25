// A restricted pickle reader for tensor state dicts, in two passes so that nothing in a file can run:
//   1. scan: decode every opcode with its argument, refusing any opcode outside ALLOWED_OPCODES and any global
//      outside the caller's allow-list, by name, before a single object exists;
//   2. run: replay the decoded instructions on a stack; REDUCE calls only the allow-listed functions.
// Values: None → null, ints → number (bigint past 2^53), floats → number, str → string, bytes → Uint8Array,
// list → array, tuple → frozen array, dict (and OrderedDict) → PickleDict, whose `attributes` keep BUILD's state.
import { DramaError } from '../errors.ts';
import { ALLOWED_OPCODES, Op, opcodeName } from './pickle-opcodes.ts';

export class PickleDict extends Map<unknown, unknown> {
  /** Instance attributes set by BUILD, e.g. the `_metadata` of a module state dict. */
  readonly attributes = new Map<string, unknown>();
}

/** A function a pickle may call through REDUCE, or a plain value it may name (a storage class). */
export type AllowedGlobal = { readonly call: (args: readonly unknown[]) => unknown } | { readonly value: unknown };

export interface PickleReadOptions {
  /** `module.name` → what it stands for; any other global is refused during the scan. */
  readonly globals: ReadonlyMap<string, AllowedGlobal>;
  /** Resolves BINPERSID ids (torch: storage references); without it, persistent ids are refused. */
  readonly persistentLoad?: (pid: unknown) => unknown;
  /** Named in error messages (e.g. the checkpoint path). */
  readonly source: string;
}

interface Instruction {
  readonly opcode: number;
  readonly position: number;
  readonly argument: unknown;
}

class GlobalReference {
  constructor(
    readonly qualifiedName: string,
    readonly allowed: AllowedGlobal,
  ) {}
}

function fail(code: string, message: string): never {
  throw new DramaError(code, message, { kind: 'bad_checkpoint' });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Pass 1: decodes opcodes and arguments; refuses unknown opcodes and globals by name; builds nothing. */
export function scanPickle(bytes: Uint8Array, options: PickleReadOptions): Instruction[] {
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
  const readLine = (position: number): string => {
    const end = bytes.indexOf(0x0a, cursor);
    if (end < 0) fail('PICKLE_TRUNCATED', `${options.source}: GLOBAL at byte ${position} has no line end`);
    const text = utf8.decode(bytes.subarray(cursor, end));
    cursor = end + 1;
    return text;
  };
  const readText = (length: number, position: number): string => {
    need(length, position);
    const text = utf8.decode(bytes.subarray(cursor, cursor + length));
    cursor += length;
    return text;
  };
  const checkGlobal = (module: string, name: string, position: number): string => {
    const qualifiedName = `${module}.${name}`;
    if (!options.globals.has(qualifiedName)) {
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

/** Scans, then runs, a pickle under the allow-list; returns the unpickled root value. */
export function readPickle(bytes: Uint8Array, options: PickleReadOptions): unknown {
  return runPickle(scanPickle(bytes, options), options);
}

function runPickle(instructions: readonly Instruction[], options: PickleReadOptions): unknown {
  let stack: unknown[] = [];
  const markStack: unknown[][] = [];
  const memo = new Map<number, unknown>();
  let position = 0;
  const malformed = (what: string): never => fail('PICKLE_MALFORMED', `${options.source}: ${what} at byte ${position}`);
  const pop = (): unknown => {
    if (stack.length === 0) malformed('stack underflow');
    return stack.pop();
  };
  const top = (): unknown => {
    if (stack.length === 0) malformed('stack underflow');
    return stack[stack.length - 1];
  };
  const popMark = (): unknown[] => {
    const items = stack;
    const previous = markStack.pop();
    if (previous === undefined) malformed('no MARK to close');
    stack = previous!;
    return items;
  };
  const setItems = (dict: unknown, items: readonly unknown[]): void => {
    if (!(dict instanceof PickleDict)) malformed('SETITEM(S) on something that is not a dict');
    for (let index = 0; index + 1 < items.length; index += 2) (dict as PickleDict).set(items[index], items[index + 1]);
  };
  const appendItems = (list: unknown, items: readonly unknown[]): void => {
    if (!Array.isArray(list) || Object.isFrozen(list)) malformed('APPEND(S) on something that is not a list');
    (list as unknown[]).push(...items);
  };

  for (const instruction of instructions) {
    position = instruction.position;
    const argument = instruction.argument;
    switch (instruction.opcode) {
      case Op.PROTO:
      case Op.FRAME:
        break;
      case Op.STOP:
        return pop();
      case Op.MARK:
        markStack.push(stack);
        stack = [];
        break;
      case Op.NONE:
        stack.push(null);
        break;
      case Op.NEWTRUE:
        stack.push(true);
        break;
      case Op.NEWFALSE:
        stack.push(false);
        break;
      case Op.BININT:
      case Op.BININT1:
      case Op.BININT2:
      case Op.LONG1:
      case Op.BINFLOAT:
      case Op.BINUNICODE:
      case Op.SHORT_BINUNICODE:
      case Op.BINBYTES:
      case Op.SHORT_BINBYTES:
        stack.push(argument);
        break;
      case Op.BINPUT:
      case Op.LONG_BINPUT:
      case Op.MEMOIZE:
        memo.set(argument as number, top());
        break;
      case Op.BINGET:
      case Op.LONG_BINGET:
        if (!memo.has(argument as number)) malformed(`memo slot ${argument} is empty`);
        stack.push(memo.get(argument as number));
        break;
      case Op.EMPTY_TUPLE:
        stack.push(Object.freeze([]));
        break;
      case Op.TUPLE: {
        // popMark() replaces `stack`, so take the items before naming the stack to push onto.
        const items = Object.freeze(popMark());
        stack.push(items);
        break;
      }
      case Op.TUPLE1:
      case Op.TUPLE2:
      case Op.TUPLE3: {
        const count = instruction.opcode - Op.TUPLE1 + 1;
        if (stack.length < count) malformed('stack underflow');
        stack.push(Object.freeze(stack.splice(stack.length - count, count)));
        break;
      }
      case Op.EMPTY_LIST:
        stack.push([]);
        break;
      case Op.APPEND: {
        const value = pop();
        appendItems(top(), [value]);
        break;
      }
      case Op.APPENDS: {
        const items = popMark();
        appendItems(top(), items);
        break;
      }
      case Op.EMPTY_DICT:
        stack.push(new PickleDict());
        break;
      case Op.SETITEM: {
        const value = pop();
        const key = pop();
        setItems(top(), [key, value]);
        break;
      }
      case Op.SETITEMS: {
        const items = popMark();
        setItems(top(), items);
        break;
      }
      case Op.GLOBAL:
        stack.push(new GlobalReference(argument as string, options.globals.get(argument as string)!));
        break;
      case Op.STACK_GLOBAL: {
        const name = pop();
        const module = pop();
        if (`${module}.${name}` !== argument) malformed('STACK_GLOBAL names changed between passes');
        stack.push(new GlobalReference(argument as string, options.globals.get(argument as string)!));
        break;
      }
      case Op.REDUCE: {
        const args = pop();
        const callable = pop();
        if (!(callable instanceof GlobalReference) || !('call' in callable.allowed)) {
          return malformed(
            `REDUCE on ${callable instanceof GlobalReference ? callable.qualifiedName : 'a value'}, which is not callable`,
          );
        }
        if (!Array.isArray(args)) malformed(`REDUCE of ${callable.qualifiedName} without an argument tuple`);
        stack.push(callable.allowed.call(args as unknown[]));
        break;
      }
      case Op.BUILD: {
        const state = pop();
        const target = top();
        if (state === null) break;
        if (!(target instanceof PickleDict) || !(state instanceof PickleDict)) {
          return malformed('BUILD is only allowed to set dict attributes on a dict');
        }
        for (const [key, value] of state) target.attributes.set(String(key), value);
        break;
      }
      case Op.BINPERSID: {
        const pid = pop();
        if (options.persistentLoad === undefined) {
          fail('PICKLE_PERSISTENT_ID_REFUSED', `${options.source}: persistent id at byte ${position} has no resolver`);
        }
        stack.push(options.persistentLoad(pid));
        break;
      }
      default:
        malformed(`opcode ${opcodeName(instruction.opcode)} has no runner`);
    }
  }
  return malformed('pickle has no STOP');
}

/** The `value` of an allow-listed global that names a thing rather than a function (e.g. a storage class). */
export function globalValue(reference: unknown): unknown {
  return reference instanceof GlobalReference && 'value' in reference.allowed ? reference.allowed.value : undefined;
}
