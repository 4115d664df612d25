// Running one prepared kernel call on the device for the contract: upload the inputs, poison the outputs with a NaN
// payload no kernel produces, run (launched directly, or replayed from a captured CUDA graph), read the outputs back
// as raw bytes; and decoding those bytes for the gates.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { CapturedGraph } from '../../../src/backend/cuda/graph.ts';
import type { Allocation } from '../../../src/backend/cuda/memory.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { bf16BitsToFloat32 } from '../../../src/numeric/dtypes.ts';
import type { HostInput, OutputKind, OutputSpec } from './contract.ts';

export type Runner = (
  cuda: CudaContext,
  pointers: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
) => void;

/** What `execute` needs: inputs to upload, outputs to allocate and poison, and the launches to make. */
export interface Launchable {
  readonly inputs: Readonly<Record<string, HostInput>>;
  readonly outputs: readonly OutputSpec[];
  readonly run: Runner;
}

export type RunMode = 'direct' | 'graph';

const POISON_BF16_PAIR = 0x7fa57fa5;
const POISON_WORD = 0x7fa5a5a5;
const ELEMENT_BYTES: Record<OutputKind, number> = { bf16: 2, f32: 4, f64: 8, i32: 4 };

function hostBytes(input: HostInput): ArrayBufferView {
  return 'bits' in input ? input.bits : input;
}

export function poisonedCount(kind: OutputKind, bytes: Uint8Array, count: number): number {
  let poisoned = 0;
  if (kind === 'bf16') {
    const bits = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
    for (const word of bits) if (word === (POISON_BF16_PAIR & 0xffff)) poisoned++;
  } else if (kind === 'f64') {
    // Both words of an fp64 element still hold the poison.
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, 2 * count);
    for (let element = 0; element < count; element++)
      if (words[2 * element] === POISON_WORD && words[2 * element + 1] === POISON_WORD) poisoned++;
  } else {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, count);
    for (const word of words) if (word === POISON_WORD) poisoned++;
  }
  return poisoned;
}

export function decode(kind: OutputKind, bytes: Uint8Array, count: number): Float64Array | Int32Array {
  if (kind === 'i32') return new Int32Array(bytes.buffer, bytes.byteOffset, count).slice();
  if (kind === 'f32') return Float64Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, count));
  if (kind === 'f64') return new Float64Array(bytes.buffer, bytes.byteOffset, count).slice();
  const bits = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  const values = new Float64Array(count);
  for (let index = 0; index < count; index++) values[index] = bf16BitsToFloat32(bits[index]!);
  return values;
}

export function elementBytes(kind: OutputKind): number {
  return ELEMENT_BYTES[kind];
}

/**
 * Uploads, runs `repeats` times (poisoning before each), returns each run's raw output bytes. In graph mode the
 * launches are captured once (after one direct run has loaded the modules and chosen any library algorithm) and the
 * graph is replayed for each repeat.
 */
export function execute(
  cuda: CudaContext,
  launchable: Launchable,
  kernel: KernelName | undefined,
  repeats: number,
  mode: RunMode = 'direct',
): Uint8Array[][] {
  const allocations: Allocation[] = [];
  let graph: CapturedGraph | undefined;
  try {
    const pointers: Record<string, bigint> = {};
    for (const [name, input] of Object.entries(launchable.inputs)) {
      const allocation = cuda.upload(hostBytes(input), `contract input ${name}`);
      allocations.push(allocation);
      pointers[name] = allocation.pointer;
    }
    const outputs = launchable.outputs.map((spec) => {
      const bytes = Math.ceil((spec.count * ELEMENT_BYTES[spec.kind]) / 4) * 4;
      const allocation = cuda.allocate(bytes, `contract output ${spec.name}`);
      allocations.push(allocation);
      pointers[spec.name] = allocation.pointer;
      return { spec, allocation, bytes };
    });
    const poison = () => {
      for (const { spec, allocation, bytes } of outputs) {
        const pattern = spec.kind === 'bf16' ? POISON_BF16_PAIR : POISON_WORD;
        cuda.driver.fillWords(allocation.pointer, pattern, bytes / 4, cuda.stream);
      }
    };
    const enqueue = () => launchable.run(cuda, pointers, kernel);
    if (mode === 'graph') {
      enqueue();
      cuda.synchronize();
      graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue);
    }
    const runs: Uint8Array[][] = [];
    for (let run = 0; run < repeats; run++) {
      poison();
      if (graph) graph.launch(cuda.stream);
      else enqueue();
      cuda.synchronize();
      runs.push(outputs.map(({ allocation, bytes }) => cuda.download(allocation.pointer, new Uint8Array(bytes))));
    }
    return runs;
  } finally {
    graph?.destroy();
    for (const allocation of allocations) allocation.free();
  }
}

/** The first `limit` elements where two runs' bytes differ, as "output[index] bits a vs b" lines. */
export function byteDifferences(
  outputs: readonly OutputSpec[],
  actual: readonly Uint8Array[],
  expected: readonly Uint8Array[],
  elementsOf: (spec: OutputSpec) => number,
  limit = 4,
): string[] {
  const lines: string[] = [];
  outputs.forEach((spec, index) => {
    const width = ELEMENT_BYTES[spec.kind];
    const a = actual[index]!;
    const b = expected[index]!;
    for (let element = 0; element < elementsOf(spec) && lines.length < limit; element++) {
      const offset = element * width;
      if (Buffer.compare(a.subarray(offset, offset + width), b.subarray(offset, offset + width)) === 0) continue;
      const hex = (bytes: Uint8Array) =>
        Buffer.from(bytes.subarray(offset, offset + width))
          .reverse()
          .toString('hex');
      const values = decode(spec.kind, a.subarray(offset, offset + width).slice(), 1)[0];
      const others = decode(spec.kind, b.subarray(offset, offset + width).slice(), 1)[0];
      lines.push(`${spec.name}[${element}] 0x${hex(a)} (${values}) vs 0x${hex(b)} (${others})`);
    }
  });
  return lines;
}
