// Loading the CUDA shared libraries through koffi, lazily: nothing is opened until a CUDA object is first asked for,
// so the cpu backend, CI and `npm test` never touch libcuda. Handles (contexts, streams, modules...) are BigInt
// pointers as koffi 3 returns them; device pointers (CUdeviceptr) are BigInt too.
import fs from 'node:fs';
import koffi from 'koffi';
import { DramaError } from '../../errors.ts';

export type NativeFunction = (...args: unknown[]) => number;
export type KoffiLibrary = ReturnType<typeof koffi.load>;

/** Opens `name` (a loader name or path); returns the reason when it cannot. */
export function tryLoadLibrary(candidates: readonly string[]): { library: KoffiLibrary } | { reason: string } {
  const reasons: string[] = [];
  for (const candidate of candidates) {
    if (candidate.includes('/') && !fs.existsSync(candidate)) continue;
    try {
      return { library: koffi.load(candidate) };
    } catch (error) {
      reasons.push(`${candidate}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  return { reason: reasons.length > 0 ? reasons.join('; ') : `none of ${candidates.join(', ')} exists` };
}

/** Binds `name` from `library`, refusing loudly when the symbol is missing (an old driver or a wrong library). */
function bind(library: KoffiLibrary, name: string, result: string, parameters: readonly string[]): NativeFunction {
  try {
    return library.func(name, result, [...parameters]) as unknown as NativeFunction;
  } catch (error) {
    throw new DramaError('CUDA_SYMBOL_MISSING', `cannot bind ${name}: ${(error as Error).message}`, {
      kind: 'device',
      cause: error,
    });
  }
}

/** A shared library's functions to bind: name → [result type, parameter types] in koffi's notation. */
export type Signatures = Readonly<Record<string, readonly [string, readonly string[]]>>;

/** Binds every function of `signatures` from `library` (each through `bind`, so a missing one is named). */
export function bindAll(library: KoffiLibrary, signatures: Signatures): Record<string, NativeFunction> {
  const native: Record<string, NativeFunction> = {};
  for (const [name, [result, parameters]] of Object.entries(signatures)) {
    native[name] = bind(library, name, result, parameters);
  }
  return native;
}

/** Address of a typed array's first byte, for building pointer tables (kernel parameters, descriptors). */
export function addressOf(view: ArrayBufferView): bigint {
  return BigInt(koffi.address(view) as bigint | number);
}

export function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(value);
  if (value === null || value === undefined) return 0n;
  throw new DramaError('CUDA_BAD_HANDLE', `expected a pointer, got ${typeof value}`, { kind: 'internal' });
}
