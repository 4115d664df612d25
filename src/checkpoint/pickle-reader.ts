// A restricted pickle reader for tensor state dicts, in two passes so that nothing in a file can run:
//   1. scan (pickle-scan.ts): decode every opcode with its argument, refusing any opcode outside ALLOWED_OPCODES and any global
//      outside the caller's allow-list, by name, before a single object exists;
//   2. run: replay the decoded instructions on a stack; REDUCE calls only the allow-listed functions.
// Values: None → null, ints → number (bigint past 2^53), floats → number, str → string, bytes → Uint8Array,
// list → array, tuple → frozen array, dict (and OrderedDict) → PickleDict, whose `attributes` keep BUILD's state.
import { DramaError } from '../errors.ts';
import { Op, opcodeName } from './pickle-opcodes.ts';
import { type Instruction, scanPickle } from './pickle-scan.ts';

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

class GlobalReference {
  constructor(
    readonly qualifiedName: string,
    readonly allowed: AllowedGlobal,
  ) {}
}

function fail(code: string, message: string): never {
  throw new DramaError(code, message, { kind: 'bad_checkpoint' });
}

/** Scans, then runs, a pickle under the allow-list; returns the unpickled root value. */
export function readPickle(bytes: Uint8Array, options: PickleReadOptions): unknown {
  return runPickle(scanPickle(bytes, { allowedGlobals: options.globals, source: options.source }), options);
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
