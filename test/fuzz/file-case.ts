// The shape of one file fuzz case and small builders shared by the case tables: a case writes a malformed file (or
// folder) into its own empty temporary folder and names the DramaError code its loader must refuse it with.
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface FileCase {
  readonly name: string;
  /** The DramaError code the load must be refused with. */
  readonly code: string;
  /** Writes the malformed input into `dir` (empty); returns the path handed to the loader. */
  readonly build: (dir: string) => Promise<string>;
}

export interface FileCaseGroup {
  readonly kind: string;
  /** Loads the path as the program would, reading everything it holds. */
  readonly load: (path: string) => Promise<unknown>;
  readonly cases: readonly FileCase[];
}

export function makeFifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

/** Writes `bytes` to `dir/name` and returns the path. */
export async function fileOf(dir: string, name: string, bytes: Uint8Array | string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

/** A safetensors file from header JSON (an object, or raw text), data bytes and an optional length prefix. */
export function safetensorsBytes(header: unknown, data: Uint8Array, declaredLength?: bigint): Uint8Array {
  const json =
    header instanceof Uint8Array ? header : Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(declaredLength ?? BigInt(json.byteLength));
  return new Uint8Array(Buffer.concat([prefix, json, data]));
}
