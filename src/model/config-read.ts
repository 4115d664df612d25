// Typed reads from one JSON object of config.json, each refusing a bad field by name with its full path
// (e.g. `text_config.layer_types[3]`). A section remembers which keys it read so that the rest can be reported as
// unknown (reported once, never fatal).
import { DramaError } from '../errors.ts';

type JsonObject = Record<string, unknown>;

const INT32_MAX = 2 ** 31 - 1;

export function configError(code: string, path: string, message: string): DramaError {
  return new DramaError(code, `config.json: ${path} ${message}`, { kind: 'bad_checkpoint', param: path });
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Checks that `value` is a JSON object; `path` names it in the refusal. */
export function asObject(value: unknown, path: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw configError('CONFIG_NOT_OBJECT', path, `must be an object, got ${describe(value)}`);
  }
  return value as JsonObject;
}

function checkInteger(value: unknown, path: string, minimum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw configError('CONFIG_NOT_INTEGER', path, `must be an integer, got ${describe(value)}`);
  }
  if (value < minimum || value > INT32_MAX) {
    throw configError('CONFIG_OUT_OF_RANGE', path, `must be an integer in [${minimum}, ${INT32_MAX}], got ${value}`);
  }
  return value;
}

/** A token id: a non-negative integer that fits int32 (ids travel as Int32Array everywhere). */
function checkTokenId(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw configError('CONFIG_NOT_INTEGER', path, `must be an integer token id, got ${describe(value)}`);
  }
  if (value < 0 || value > INT32_MAX) {
    throw configError('CONFIG_ID_NOT_INT32', path, `token id ${value} does not fit int32 [0, ${INT32_MAX}]`);
  }
  return value;
}

export class ConfigSection {
  private readonly read = new Set<string>();

  constructor(
    readonly object: JsonObject,
    readonly path: string,
  ) {}

  static of(value: unknown, path: string): ConfigSection {
    return new ConfigSection(asObject(value, path), path);
  }

  field(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  has(key: string): boolean {
    return this.object[key] !== undefined && this.object[key] !== null;
  }

  /** The raw value (marked as read); undefined when absent or null. */
  raw(key: string): unknown {
    this.read.add(key);
    const value = this.object[key];
    return value === null ? undefined : value;
  }

  private required(key: string): unknown {
    const value = this.raw(key);
    if (value === undefined) throw configError('CONFIG_MISSING_FIELD', this.field(key), 'is missing');
    return value;
  }

  integer(key: string, options: { minimum?: number; fallback?: number } = {}): number {
    const value = options.fallback !== undefined && !this.has(key) ? options.fallback : this.required(key);
    this.read.add(key);
    return checkInteger(value, this.field(key), options.minimum ?? 1);
  }

  /** A finite number > 0 (or >= 0 with `allowZero`). */
  positive(key: string, options: { fallback?: number; allowZero?: boolean } = {}): number {
    const value = options.fallback !== undefined && !this.has(key) ? options.fallback : this.required(key);
    this.read.add(key);
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw configError('CONFIG_NOT_NUMBER', this.field(key), `must be a finite number, got ${describe(value)}`);
    }
    if (value < 0 || (value === 0 && !options.allowZero)) {
      throw configError(
        'CONFIG_OUT_OF_RANGE',
        this.field(key),
        `must be ${options.allowZero ? '>= 0' : '> 0'}, got ${value}`,
      );
    }
    return value;
  }

  boolean(key: string, fallback?: boolean): boolean {
    const value = fallback !== undefined && !this.has(key) ? fallback : this.required(key);
    this.read.add(key);
    if (typeof value !== 'boolean') {
      throw configError('CONFIG_NOT_BOOLEAN', this.field(key), `must be true or false, got ${describe(value)}`);
    }
    return value;
  }

  string(key: string, fallback?: string): string {
    const value = fallback !== undefined && !this.has(key) ? fallback : this.required(key);
    this.read.add(key);
    if (typeof value !== 'string') {
      throw configError('CONFIG_NOT_STRING', this.field(key), `must be a string, got ${describe(value)}`);
    }
    return value;
  }

  /** A string that must be one of `allowed`. */
  choice<T extends string>(key: string, allowed: readonly T[], fallback?: T): T {
    const value = this.string(key, fallback);
    if (!(allowed as readonly string[]).includes(value)) {
      throw configError(
        'CONFIG_UNSUPPORTED',
        this.field(key),
        `must be one of ${allowed.map((item) => JSON.stringify(item)).join(', ')}, got ${JSON.stringify(value)}`,
      );
    }
    return value as T;
  }

  array(key: string): unknown[] {
    const value = this.required(key);
    if (!Array.isArray(value)) {
      throw configError('CONFIG_NOT_ARRAY', this.field(key), `must be an array, got ${describe(value)}`);
    }
    return value;
  }

  integerArray(key: string, minimum = 1): number[] {
    return this.array(key).map((item, index) => checkInteger(item, `${this.field(key)}[${index}]`, minimum));
  }

  /** An optional token id. */
  tokenId(key: string): number | undefined {
    const value = this.raw(key);
    return value === undefined ? undefined : checkTokenId(value, this.field(key));
  }

  /** A token id or a list of them (transformers' `eos_token_id` may be either); absent → []. */
  tokenIds(key: string): number[] {
    const value = this.raw(key);
    if (value === undefined) return [];
    if (Array.isArray(value)) return value.map((item, index) => checkTokenId(item, `${this.field(key)}[${index}]`));
    return [checkTokenId(value, this.field(key))];
  }

  /** A nested section, or undefined when absent. */
  section(key: string): ConfigSection | undefined {
    const value = this.raw(key);
    return value === undefined ? undefined : ConfigSection.of(value, this.field(key));
  }

  /** Marks keys that are known and deliberately ignored (training-only settings and the like). */
  ignore(...keys: string[]): void {
    for (const key of keys) this.read.add(key);
  }

  /** Paths of every key this section never read. */
  unknownKeys(): string[] {
    return Object.keys(this.object)
      .filter((key) => !this.read.has(key))
      .map((key) => this.field(key));
  }
}
