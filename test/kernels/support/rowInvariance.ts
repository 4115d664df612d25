// Runs an InvarianceCase (contract.ts): the case is prepared at each row count from the same seed, run once on
// poisoned outputs, and every row's slice of each output named in `elementsPerRow` is compared byte for byte with
// the same row in the largest call. A row's bits must not depend on how many rows share the call.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { Allocation } from '../../../src/backend/cuda/memory.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import type { HostInput, InvarianceCase, Prepared } from './contract.ts';
import { elementBytes } from './execution.ts';

const DEFAULT_ROW_COUNTS = [1, 2, 7, 64, 257];
const POISON_WORD = 0x7fa5a5a5;

export interface InvarianceResult {
  readonly label: string;
  /** (row count, row) pairs whose bytes differ from the largest call's. */
  readonly mismatches: number;
  readonly firstMismatch: string | undefined;
}

function hostBytes(input: HostInput): ArrayBufferView {
  return 'bits' in input ? input.bits : input;
}

/** Each output's bytes after one run on freshly uploaded inputs. */
function runOnce(cuda: CudaContext, prepared: Prepared, kernel: KernelName | undefined): Map<string, Uint8Array> {
  const allocations: Allocation[] = [];
  try {
    const pointers: Record<string, bigint> = {};
    for (const [name, input] of Object.entries(prepared.inputs)) {
      const allocation = cuda.upload(hostBytes(input), `invariance input ${name}`);
      allocations.push(allocation);
      pointers[name] = allocation.pointer;
    }
    const outputs = prepared.outputs.map((spec) => {
      const bytes = Math.ceil((spec.count * elementBytes(spec.kind)) / 4) * 4;
      const allocation = cuda.allocate(bytes, `invariance output ${spec.name}`);
      allocations.push(allocation);
      pointers[spec.name] = allocation.pointer;
      cuda.driver.fillWords(allocation.pointer, POISON_WORD, bytes / 4, cuda.stream);
      return { spec, allocation, bytes };
    });
    prepared.run(cuda, pointers, kernel);
    cuda.synchronize();
    const result = new Map<string, Uint8Array>();
    for (const { spec, allocation, bytes } of outputs) {
      result.set(spec.name, cuda.download(allocation.pointer, new Uint8Array(bytes)));
    }
    return result;
  } finally {
    for (const allocation of allocations) allocation.free();
  }
}

export function checkInvariance(
  cuda: CudaContext,
  invariance: InvarianceCase,
  seed: number,
  kernel: KernelName | undefined = undefined,
): InvarianceResult {
  const rowCounts = [...(invariance.rowCounts ?? DEFAULT_ROW_COUNTS)].sort((a, b) => a - b);
  const largest = rowCounts[rowCounts.length - 1]!;
  const prepareAt = (rows: number) => invariance.prepare(seed, rows);
  const largestPrepared = prepareAt(largest);
  const kinds = new Map(largestPrepared.outputs.map((spec) => [spec.name, spec.kind]));
  const baseline = runOnce(cuda, largestPrepared, kernel);
  let mismatches = 0;
  let firstMismatch: string | undefined;
  for (const rows of rowCounts.slice(0, -1)) {
    const outputs = runOnce(cuda, prepareAt(rows), kernel);
    for (let row = 0; row < rows; row++) {
      for (const [name, elements] of Object.entries(invariance.elementsPerRow)) {
        const rowBytes = elements * elementBytes(kinds.get(name)!);
        const begin = row * rowBytes;
        const mine = outputs.get(name)!.subarray(begin, begin + rowBytes);
        const reference = baseline.get(name)!.subarray(begin, begin + rowBytes);
        if (Buffer.compare(mine, reference) !== 0) {
          mismatches++;
          firstMismatch ??= `${name} row ${row} differs between ${rows} and ${largest} rows`;
        }
      }
    }
  }
  return { label: invariance.label, mismatches, firstMismatch };
}
