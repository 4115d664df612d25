// The safetensors layout: an 8-byte little-endian header length N, N bytes of JSON, then the data region.
// The JSON maps each tensor name to { dtype, shape, data_offsets: [begin, end] } (byte offsets into the data region)
// plus an optional "__metadata__" of string → string. Parsing checks everything a reader relies on and refuses,
// by name, whatever does not hold: truncation, a header past the end, bad JSON, a name given twice, unknown dtypes,
// byte spans that disagree with shape × dtype size, and offsets out of range, overlapping, or not tiling the data
// region exactly (the reference library refuses gaps and trailing bytes too).
import { DramaError } from '../errors.ts';
import { firstDuplicateKey } from './json-keys.ts';
import { type DType, dtypeByteSize, elementCount, isDType } from './tensor.ts';

export const HEADER_LENGTH_BYTES = 8;
/** The reference implementation's cap on header size; anything larger is not a real header. */
const MAX_HEADER_BYTES = 100_000_000;

export interface SafetensorsEntry {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: number[];
  /** The file the header was read from, as the parse was told it. */
  readonly file: string;
  /** Absolute byte offset of the tensor in the file (header included). */
  readonly fileOffset: number;
  readonly byteLength: number;
}

export interface SafetensorsHeader {
  /** One a tensor, in the header's order (names are distinct: a repeated one is refused). */
  readonly entries: SafetensorsEntry[];
  readonly metadata: Record<string, string>;
  /** First byte of the data region. */
  readonly dataStart: number;
}

function refuse(code: string, file: string, message: string): never {
  throw new DramaError(code, `${file}: ${message}`, { kind: 'bad_checkpoint', param: file });
}

/** Checks the 8-byte length prefix against the file size; returns the header's JSON byte length. */
export function parseHeaderLength(prefix: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < HEADER_LENGTH_BYTES || prefix.byteLength < HEADER_LENGTH_BYTES) {
    refuse('SAFETENSORS_TRUNCATED', file, `file is ${fileSize} bytes, too short for the 8-byte header length`);
  }
  const length = new DataView(prefix.buffer, prefix.byteOffset, HEADER_LENGTH_BYTES).getBigUint64(0, true);
  if (length > BigInt(fileSize - HEADER_LENGTH_BYTES)) {
    refuse(
      'SAFETENSORS_HEADER_PAST_END',
      file,
      `header length ${length} runs past the end of the ${fileSize}-byte file`,
    );
  }
  if (length > BigInt(MAX_HEADER_BYTES)) {
    refuse('SAFETENSORS_HEADER_TOO_LARGE', file, `header length ${length} is over the ${MAX_HEADER_BYTES}-byte limit`);
  }
  return Number(length);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Parses and checks the JSON header given the file's total size. */
export function parseHeader(json: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  let parsed: unknown;
  let text = '';
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(json);
    parsed = JSON.parse(text);
  } catch (error) {
    refuse('SAFETENSORS_BAD_JSON', file, `header is not valid UTF-8 JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    refuse('SAFETENSORS_BAD_JSON', file, 'header JSON is not an object');
  }
  const header = parsed as Record<string, unknown>;
  const repeated = firstDuplicateKey(text, header);
  if (repeated !== undefined) {
    refuse('SAFETENSORS_DUPLICATE_TENSOR', file, `the header gives ${repeated} more than once`);
  }
  const names = Object.keys(header);
  const dataStart = HEADER_LENGTH_BYTES + json.byteLength;
  const dataLength = fileSize - dataStart;
  const metadata: Record<string, string> = {};
  const spans: { name: string; begin: number; end: number }[] = [];
  const entries: SafetensorsEntry[] = [];
  // Keys then lookups: entries() would build a [name, value] pair for each of tens of thousands of tensors.
  for (const name of names) {
    const value = header[name];
    if (name === '__metadata__') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        refuse('SAFETENSORS_BAD_HEADER', file, '__metadata__ is not an object');
      }
      for (const [key, text] of Object.entries(value as Record<string, unknown>)) {
        if (typeof text !== 'string') refuse('SAFETENSORS_BAD_HEADER', file, `__metadata__.${key} is not a string`);
        metadata[key] = text as string;
      }
      continue;
    }
    const record = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    if (typeof record !== 'object' || record === null)
      refuse('SAFETENSORS_BAD_HEADER', file, `tensor ${name} is not an object`);
    const { dtype, shape, data_offsets: offsets } = record;
    if (typeof dtype !== 'string') refuse('SAFETENSORS_BAD_HEADER', file, `tensor ${name} has no dtype string`);
    if (!isDType(dtype as string)) {
      refuse(
        'SAFETENSORS_UNKNOWN_DTYPE',
        file,
        `tensor ${name} has dtype ${dtype}, not one of BF16, F16, F32, F8_E4M3, I64, I32, U8`,
      );
    }
    if (!Array.isArray(shape) || !shape.every(isCount)) {
      refuse('SAFETENSORS_BAD_HEADER', file, `tensor ${name} has a shape that is not a list of counts`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2) {
      refuse('SAFETENSORS_BAD_HEADER', file, `tensor ${name} has no [begin, end] data_offsets`);
    }
    const [begin, end] = offsets as unknown[];
    if (!isCount(begin) || !isCount(end) || end < begin) {
      refuse(
        'SAFETENSORS_OFFSET_OUT_OF_RANGE',
        file,
        `tensor ${name} has data_offsets [${begin}, ${end}], not 0 ≤ begin ≤ end`,
      );
    }
    const byteLength = (end as number) - (begin as number);
    const expected = elementCount(shape as number[]) * dtypeByteSize(dtype as DType);
    if (byteLength !== expected) {
      refuse(
        'SAFETENSORS_SIZE_MISMATCH',
        file,
        `tensor ${name} spans ${byteLength} bytes but ${dtype} [${(shape as number[]).join(', ')}] needs ${expected}`,
      );
    }
    spans.push({ name, begin: begin as number, end: end as number });
    // The parsed shape is this entry's alone: nothing else holds the parsed header.
    entries.push({
      name,
      dtype: dtype as DType,
      shape: shape as number[],
      file,
      fileOffset: dataStart + (begin as number),
      byteLength,
    });
  }
  checkSpans(spans, dataLength, file);
  return { entries, metadata, dataStart };
}

/** Refuses overlaps and gaps; tells a cut-short file (a tiling that runs past the end) from a stray offset. */
function checkSpans(spans: { name: string; begin: number; end: number }[], dataLength: number, file: string): void {
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let gap: { before: string; after: string; at: number } | undefined;
  let previousEnd = 0;
  let previousName = '';
  for (const span of spans) {
    // An empty tensor inside another's bytes counts too: the reference library refuses it as well.
    if (span.begin < previousEnd) {
      refuse(
        'SAFETENSORS_OFFSETS_OVERLAP',
        file,
        `tensors ${previousName} and ${span.name} overlap at data byte ${span.begin}`,
      );
    }
    if (span.begin > previousEnd && gap === undefined) {
      gap = { before: previousName, after: span.name, at: previousEnd };
    }
    previousEnd = span.end;
    previousName = span.name;
  }
  if (previousEnd > dataLength) {
    if (gap === undefined) {
      refuse(
        'SAFETENSORS_TRUNCATED',
        file,
        `header describes ${previousEnd} data bytes but the file holds ${dataLength}: the file is cut short`,
      );
    }
    const outside = spans.find((span) => span.end > dataLength)!;
    refuse(
      'SAFETENSORS_OFFSET_OUT_OF_RANGE',
      file,
      `tensor ${outside.name} ends at data byte ${outside.end}, past the ${dataLength}-byte data region`,
    );
  }
  if (gap !== undefined) {
    const between = gap.before === '' ? `before tensor ${gap.after}` : `between tensors ${gap.before} and ${gap.after}`;
    refuse('SAFETENSORS_OFFSETS_GAP', file, `data bytes from ${gap.at} ${between} belong to no tensor`);
  }
  if (previousEnd < dataLength) {
    refuse(
      'SAFETENSORS_TRAILING_DATA',
      file,
      `the last ${dataLength - previousEnd} bytes of the data region belong to no tensor`,
    );
  }
}

/** The header bytes (length prefix + JSON padded with spaces to a multiple of 8) for tensors laid out in order. */
export function buildHeader(
  tensors: readonly { name: string; dtype: DType; shape: readonly number[]; byteLength: number }[],
  metadata: Record<string, string> | undefined,
): { bytes: Uint8Array; offsets: number[] } {
  const header: Record<string, unknown> = {};
  if (metadata !== undefined && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  const offsets: number[] = [];
  let offset = 0;
  for (const tensor of tensors) {
    header[tensor.name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + tensor.byteLength],
    };
    offsets.push(offset);
    offset += tensor.byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const bytes = new Uint8Array(HEADER_LENGTH_BYTES + padded).fill(0x20);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(padded), true);
  bytes.set(json, HEADER_LENGTH_BYTES);
  return { bytes, offsets };
}
