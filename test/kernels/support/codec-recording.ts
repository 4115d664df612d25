// The recording device as the CUDA codec's host-side tests use it (codecEncoderLaunches, codecDecoderLaunches):
// nothing runs, downloads read zeros, every allocation is kept with its label, and each launch's arguments are read
// while they are still the launcher's.
import assert from 'node:assert/strict';
import koffi from 'koffi';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { observeLaunches } from '../../../src/backend/cuda/ops/launch.ts';
import { recordingDevice } from '../../backend/support/recording-blocks.ts';

export interface Region {
  readonly pointer: bigint;
  readonly bytes: number;
  readonly label: string;
  freed: boolean;
}

/** The recording device with the copies, fills and allocations the codec makes; allocation `failAfter` throws. */
export function codecDevice(failAfter = Number.POSITIVE_INFINITY) {
  const { cuda, launched } = recordingDevice();
  const regions: Region[] = [];
  const device = cuda as unknown as Record<string, unknown> & { driver: Record<string, unknown> };
  const allocate = device.allocate as (bytes: number, label: string) => { pointer: bigint; free: () => void };
  device.allocate = (bytes: number, label: string) => {
    if (regions.length >= failAfter) throw new Error('device memory exhausted (planted)');
    const allocation = allocate(bytes, label);
    const region = { pointer: allocation.pointer, bytes, label, freed: false };
    regions.push(region);
    return { ...allocation, free: () => (region.freed = true) };
  };
  device.upload = (values: ArrayBufferView, label: string) =>
    (device.allocate as (bytes: number, label: string) => unknown)(Math.max(values.byteLength, 1), label);
  device.download = <T>(_source: bigint, into: T) => into;
  device.driver.fillWords = () => {};
  device.driver.copyHostToDevice = () => {};
  device.driver.synchronizeStream = () => {};
  return { cuda: cuda as CudaContext, launched, regions };
}

export interface Observed {
  readonly name: string;
  /** Each argument as the launcher wrote it: 4-byte ones as int32, 8-byte ones as int64 (pointers included). */
  readonly values: readonly (number | bigint)[];
  readonly grid: readonly number[];
}

/** Every launch's arguments and grid while `work` runs (observing also keeps the codecs from recording graphs). */
export function observing<T>(work: () => T): { result: T; observed: Observed[] } {
  const observed: Observed[] = [];
  const previous = observeLaunches((kernel, _handle, args, shape) => {
    const values = args.sizes.map((size, index) =>
      size === 4
        ? (koffi.decode(args.parameters[index]!, 'int32_t') as number)
        : BigInt(koffi.decode(args.parameters[index]!, 'int64_t') as number | bigint),
    );
    observed.push({ name: kernel.name, values, grid: [...shape.grid] });
  });
  try {
    return { result: work(), observed };
  } finally {
    observeLaunches(previous);
  }
}

const onTensorCores = (launch: Observed) => launch.name.startsWith('codec_conv_mma');

/**
 * Holds every tensor-core conv of one codec call (`callFrames` frames, all lanes) to the staged path: staged by
 * codec_conv_stage_f16 just before it, its padded rows exactly the call's rows at its layer and every lane's carried
 * rows, its stride Cin rounded up to 8, all of it inside `scratch`; a flat tiling one grid z. Returns the convs and
 * how many tiled flat.
 */
export function checkStagedConvs(observed: readonly Observed[], callFrames: number, scratch: Region, label: string) {
  let convs = 0;
  let flat = 0;
  observed.forEach((launch, index) => {
    if (!onTensorCores(launch)) return;
    convs++;
    const what = `${label}, launch ${index} (${launch.name})`;
    assert.match(launch.name, /^codec_conv_mma_staged_/, `${what}: staged in each block`);
    assert.equal(observed[index - 1]?.name, 'codec_conv_stage_f16', `${what}: not staged just before`);
    const [pointer, paddedRows, stride, sequences, isFlat] = launch.values.slice(20, 25) as [
      bigint,
      bigint,
      number,
      number,
      number,
    ];
    const [rowScale, inputs, , kernel, dilation] = launch.values.slice(12, 17) as number[];
    const historyRows = (kernel! - 1) * dilation!;
    assert.equal(paddedRows, BigInt(callFrames * rowScale! + sequences * historyRows), `${what}: padded rows`);
    assert.equal(stride, Math.ceil(inputs! / 8) * 8, `${what}: stride`);
    const end = pointer + paddedRows * BigInt(stride) * 2n;
    assert.ok(
      pointer === scratch.pointer && end <= scratch.pointer + BigInt(scratch.bytes),
      `${what}: past the scratch`,
    );
    if (isFlat === 1) {
      flat++;
      assert.equal(launch.grid[2], 1, `${what}: a flat tiling is one grid z`);
    }
  });
  return { convs, flat };
}

/** Holds a call's tensor-core convs to staging in each block: no staging launch, no staged entry. */
export function checkUnstagedConvs(observed: readonly Observed[]): number {
  const convs = observed.filter(onTensorCores);
  assert.ok(convs.every((launch) => !launch.name.includes('staged')));
  assert.ok(observed.every((launch) => launch.name !== 'codec_conv_stage_f16'));
  return convs.length;
}
