// Recording block contexts for the cuda blocks' host tests: a device whose launches are recorded with their
// parameters (nothing runs) and named scratch over a bump allocator; a linear that records what it projected, or
// the real GEMM launchers (fused as the backend runs them, or one gemm() per weight) over the same device.
import koffi from 'koffi';
import type { BlockContext } from '../../../src/backend/cuda/block-context.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { LaunchShape } from '../../../src/backend/cuda/driver.ts';
import { fusedLinear, fusedLinearCombinedBy } from '../../../src/backend/cuda/fused-linear.ts';
import { gemm, gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import { DeviceScratch } from '../../../src/backend/cuda/scratch.ts';
import { ContextStreams } from '../../../src/backend/cuda/streams.ts';
import type { CudaBuffer, CudaTensor } from '../../../src/backend/cuda/tensors.ts';
import type { DType } from '../../../src/backend/types.ts';

export interface Launched {
  readonly name: string;
  readonly shape: LaunchShape;
  readonly parameters: BigUint64Array;
  /** Present (true) only for a launch enqueued on the side stream of an alongside(). */
  readonly side?: true;
}

export type Call = {
  readonly linear: string;
  readonly x: bigint;
  readonly out: bigint;
  readonly rows: number;
  /** The fused call it came in (its first weight's name), or undefined for a lone linear. */
  readonly fused?: string;
};

let nextPointer = 0x1000_0000n;
export function buffer(dtype: DType, elements: number): CudaBuffer {
  const pointer = nextPointer;
  nextPointer += BigInt(Math.ceil((elements * 4) / 256 + 1) * 256);
  return { pointer, dtype, elements };
}

export function tensor(dtype: DType, shape: readonly number[]): CudaTensor {
  return {
    dtype,
    shape,
    data: buffer(
      dtype,
      shape.reduce((a, b) => a * b, 1),
    ),
  };
}

/** Streams over a driver that only counts: stream 1n is the main one, the next the side stream. */
function countingStreams(): ContextStreams {
  let handles = 0n;
  const next = () => {
    handles += 1n;
    return handles;
  };
  const nothing = () => {};
  const driver = {
    createStream: next,
    createEvent: next,
    destroyStream: nothing,
    destroyEvent: nothing,
    synchronizeStream: nothing,
    recordEvent: nothing,
    streamWaitEvent: nothing,
  };
  return new ContextStreams(driver, true);
}

/** A device that records every launch (name, shape, parameter table, side stream) and hands out fake allocations. */
export function recordingDevice(): { cuda: CudaContext; launched: Launched[] } {
  const launched: Launched[] = [];
  const streams = countingStreams();
  const record = (shape: LaunchShape, stream: unknown, parameters: BigUint64Array, name: string) => {
    const side = stream !== streams.main ? { side: true as const } : {};
    launched.push({ name, shape, parameters, ...side });
  };
  const cuda = {
    get stream() {
      return streams.current;
    },
    alongside: (side: () => void, main: () => void) => streams.alongside(side, main),
    kernels: { kernel: (family: string, name: string) => `${family}/${name}` },
    driver: {
      launch: (_h: unknown, shape: LaunchShape, s: unknown, parameters: BigUint64Array, name: string) =>
        record(shape, s, parameters, name),
      launchEx: (_h: unknown, shape: LaunchShape, s: unknown, parameters: BigUint64Array, _a: unknown, name: string) =>
        record(shape, s, parameters, name),
      fillBytes: () => {},
      setMaxDynamicSharedBytes: () => {},
    },
    allocate: (bytes: number, label: string) => {
      const { pointer } = buffer('i32', Math.ceil(bytes / 4));
      return { kind: 'device', pointer, bytes, label, free: () => {} };
    },
    synchronize: () => {},
  } as unknown as CudaContext;
  return { cuda, launched };
}

/** A block context whose device records launches and whose linear records what it projected. */
export function recordingContext(): {
  ctx: BlockContext;
  launched: Launched[];
  calls: Call[];
  names: Map<CudaTensor, string>;
} {
  const { cuda, launched } = recordingDevice();
  const calls: Call[] = [];
  const names = new Map<CudaTensor, string>();
  const ctx: BlockContext = {
    cuda,
    scratch: new DeviceScratch(cuda),
    linear(x, weight, out, rows) {
      calls.push({ linear: names.get(weight) ?? '?', x: x.pointer, out: out.pointer, rows });
    },
    linears(x, segments, rows) {
      const fused = names.get(segments[0]!.weight) ?? '?';
      for (const { weight, out } of segments) {
        calls.push({ linear: names.get(weight) ?? '?', x: x.pointer, out: out.pointer, rows, fused });
      }
    },
    // Records the projections only: the GEMM's own combine, as where K does not split (a SwiGLU then runs its kernel).
    linearsCombinedBy(x, segments, rows) {
      ctx.linears(x, segments, rows);
      return false;
    },
    prepared: (_key, _label, make) => make(),
    countAllocation: () => {},
    // The test frees its weights itself, at the end.
    releaseWeights: () => {},
  };
  return { ctx, launched, calls, names };
}

/**
 * A block context over the same recording device whose linear and linears launch the real GEMM launchers: `fused`
 * runs linears as the backend does (segmented GEMMs), `separate` as one gemm() per weight, as before.
 */
export function launchingContext(mode: 'fused' | 'separate'): { ctx: BlockContext; launched: Launched[] } {
  const { ctx: recording, launched } = recordingContext();
  const cuda = recording.cuda as unknown as {
    kernels: Record<string, unknown>;
    driver: Record<string, unknown>;
  };
  cuda.kernels.prepareOnce = () => {};
  cuda.driver.launchEx = (
    _handle: unknown,
    shape: LaunchShape,
    stream: unknown,
    parameters: BigUint64Array,
    _attributes: unknown,
    name: string,
  ) => {
    const side = stream !== 1n ? { side: true as const } : {};
    launched.push({ name, shape, parameters, ...side });
  };
  const workspace = (bytes: number) => recording.scratch.bytes('linear.workspace', bytes);
  const ctx: BlockContext = {
    ...recording,
    linear(x, weight, out, rows) {
      const [outFeatures, inFeatures] = weight.shape as [number, number];
      const bytes = gemmWorkspaceBytes(rows, outFeatures, inFeatures);
      const a = { y: out.pointer, x: x.pointer, w: weight.data.pointer, rows, outFeatures, inFeatures };
      gemm(recording.cuda, { ...a, workspace: bytes > 0 ? workspace(bytes) : undefined });
    },
    linears(x, segments, rows) {
      if (mode === 'fused') fusedLinear(recording.cuda, workspace, 64, x, segments, rows);
      else for (const { weight, out } of segments) ctx.linear(x, weight, out, rows);
    },
    linearsCombinedBy(x, segments, rows, combine) {
      if (mode === 'fused') return fusedLinearCombinedBy(recording.cuda, workspace, 64, x, segments, rows, combine);
      ctx.linears(x, segments, rows);
      return false;
    },
  };
  return { ctx, launched };
}

export const gemmLaunches = (launched: readonly Launched[]) =>
  launched.filter((launch) => launch.name.startsWith('gemm')).map((launch) => launch.name);

/** A context that fails the test if a block touches it: refusals must come before any work. */
export const untouchable: BlockContext = new Proxy({} as BlockContext, {
  get(_target, property) {
    throw new Error(`the block used ctx.${String(property)} before refusing`);
  },
});

export const dtypeRefusal = (error: unknown) => (error as { code?: string }).code === 'TENSOR_DTYPE_UNSUPPORTED';

export const word = (launch: Launched, index: number) => BigInt(koffi.decode(launch.parameters[index]!, 'int64_t'));
export const int32At = (launch: Launched, index: number) =>
  koffi.decode(launch.parameters[index]!, 'int32_t') as number;
