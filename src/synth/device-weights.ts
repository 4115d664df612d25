// A weight source whose tensors are drawn in device memory (kernels/cuda/synth_init.cu) instead of read from files:
// the model loaders (Backbone.load, Tower.load) read it as they read a checkpoint, and every tensor holds the values
// `synth` would have written for the same seed. Tensors are carved from large device arenas (one driver allocation
// per GiB, not one per tensor); tiny ones are drawn on the host and uploaded.
import type { CudaContext } from '../backend/cuda/context.ts';
import type { Allocation } from '../backend/cuda/memory.ts';
import { synthFillBf16, synthFillBlockScales, synthFillE4m3 } from '../backend/cuda/ops/synthInit.ts';
import type { CudaBuffer, CudaTensor } from '../backend/cuda/tensors.ts';
import { elementBytes, shapeElements } from '../backend/cuda/tensors.ts';
import type { Backend, DType, LinearWeight, SwiGluWeights, Tensor } from '../backend/types.ts';
import { float32ToTensor, tensorByteLength, tensorElements } from '../checkpoint/tensor.ts';
import { DramaError } from '../errors.ts';
import type { StoredTensor, WeightSource } from '../model/tensor-source.ts';
import { blockScaleShape, type SwiGluNames, type TensorPart, type TensorSpec } from '../model/weights.ts';
import { deviceFill } from './device-init.ts';
import { initialValues, uniformCodeTable } from './init.ts';

const ARENA_BYTES = 2 ** 30;
const ALIGNMENT = 256;

/** Device bytes handed out in aligned pieces of large allocations; an allocation is freed when every piece carved
 *  from it has been given back, or all of them together by release(). */
class DeviceArena {
  private readonly held: Allocation[] = [];
  /** Pieces carved from each allocation and not given back yet. */
  private readonly live = new Map<Allocation, number>();
  private current: Allocation | undefined;
  private used = 0;
  /** Bytes of the tensors carved so far (alignment padding excluded). */
  tensorBytes = 0;

  /** `expectedBytes`: what will be carved in all, so that the last allocation is no larger than it needs. */
  constructor(
    private readonly cuda: CudaContext,
    private readonly expectedBytes: number,
  ) {}

  carve(bytes: number): bigint {
    const size = Math.ceil(bytes / ALIGNMENT) * ALIGNMENT;
    if (this.current === undefined || this.used + size > this.current.bytes) {
      const remaining = Math.min(ARENA_BYTES, this.expectedBytes - this.tensorBytes + 64 * ALIGNMENT);
      this.current = this.cuda.allocate(Math.max(remaining, size), 'synthetic weights');
      this.held.push(this.current);
      this.live.set(this.current, 0);
      this.used = 0;
    }
    this.live.set(this.current, this.live.get(this.current)! + 1);
    const pointer = this.current.pointer + BigInt(this.used);
    this.used += size;
    this.tensorBytes += bytes;
    return pointer;
  }

  /** Bytes of the driver allocations. */
  get heldBytes(): number {
    return this.held.reduce((sum, allocation) => sum + allocation.bytes, 0);
  }

  /** Gives back the piece at `pointer`; false when no allocation of this arena holds it. */
  giveBack(pointer: bigint): boolean {
    const index = this.held.findIndex((a) => pointer >= a.pointer && pointer < a.pointer + BigInt(a.bytes));
    if (index < 0) return false;
    const allocation = this.held[index]!;
    const left = this.live.get(allocation)! - 1;
    this.live.set(allocation, left);
    if (left === 0) {
      allocation.free();
      this.held.splice(index, 1);
      this.live.delete(allocation);
      if (this.current === allocation) this.current = undefined;
    }
    return true;
  }

  release(): void {
    for (const allocation of this.held.splice(0)) allocation.free();
    this.live.clear();
    this.current = undefined;
  }
}

export interface DeviceWeightProgress {
  readonly tensors: number;
  readonly bytes: number;
}

export class DeviceWeightSource implements WeightSource<CudaBuffer> {
  private readonly specs: ReadonlyMap<string, TensorSpec>;
  private readonly arena: DeviceArena;
  /** The routed experts apart, so that their allocations empty (and are freed) once the MoE block has packed them. */
  private readonly expertArena: DeviceArena;
  private readonly codeTable: Allocation;
  private readonly drawn = { tensors: 0, bytes: 0 };

  constructor(
    private readonly cuda: CudaContext,
    readonly backend: Backend<CudaBuffer>,
    specs: readonly TensorSpec[],
    private readonly seed: number,
    private readonly gains: Record<TensorPart, number>,
    /** Bytes the device fills will write in all (the arenas are sized to it). */
    deviceBytes: number,
    private readonly onTensor?: (progress: DeviceWeightProgress) => void,
  ) {
    this.specs = new Map(specs.map((spec) => [spec.name, spec]));
    const expertBytes = specs
      .filter((spec) => isRoutedExpert(spec))
      .reduce((sum, spec) => sum + tensorByteLength(spec.dtype, spec.shape), 0);
    this.arena = new DeviceArena(cuda, deviceBytes - expertBytes);
    this.expertArena = new DeviceArena(cuda, expertBytes);
    this.codeTable = cuda.upload(uniformCodeTable(), 'e4m3 uniform code table');
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  rowBlocks(name: string): Promise<Tensor<CudaBuffer>[]> {
    throw new DramaError('SYNTHETIC_WEIGHTS_ON_DEVICE', `${name} is drawn in device memory as one tensor, not split`, {
      kind: 'internal',
    });
  }

  private upload(stored: StoredTensor): Tensor<CudaBuffer> {
    return this.backend.fromHost(stored.dtype, stored.shape, stored.elements);
  }

  async tensor(name: string): Promise<Tensor<CudaBuffer>> {
    const spec = this.spec(name);
    const fill = deviceFill(spec, this.seed, this.gains[spec.part]);
    const count = shapeElements(spec.shape);
    if (fill.kind === 'host') return this.hostDrawn(spec);
    if (fill.kind === 'bf16') {
      const tensor = this.carve('bf16', spec.shape, this.arenaFor(spec));
      synthFillBf16(this.cuda, { out: tensor.data.pointer, first: 0, count, fill });
      return tensor;
    }
    const tensor = this.carve('e4m3', spec.shape, this.arenaFor(spec));
    synthFillE4m3(this.cuda, { out: tensor.data.pointer, count, stream: fill.weight, table: this.codeTable.pointer });
    return tensor;
  }

  async rows(name: string, ids: Int32Array): Promise<Tensor<CudaBuffer>> {
    const spec = this.spec(name);
    const fill = deviceFill(spec, this.seed, this.gains[spec.part]);
    const cols = spec.shape[1]!;
    if (fill.kind !== 'bf16' || spec.shape.length !== 2) {
      throw new DramaError('SYNTHETIC_ROWS_UNSUPPORTED', `rows of ${name} can be drawn only from a bf16 table`, {
        kind: 'internal',
      });
    }
    const tensor = this.carve('bf16', [ids.length, cols]);
    // One fill per run of consecutive ids (the semantic ids are one run).
    for (let start = 0; start < ids.length; ) {
      let end = start + 1;
      while (end < ids.length && ids[end] === ids[end - 1]! + 1) end++;
      const out = tensor.data.pointer + BigInt(start * cols * 2);
      synthFillBf16(this.cuda, { out, first: ids[start]! * cols, count: (end - start) * cols, fill });
      start = end;
    }
    return tensor;
  }

  /** A [out, in] linear weight; an e4m3 one carries its block scales, drawn as synth draws them. */
  async linear(name: string): Promise<LinearWeight<CudaBuffer>> {
    const weight = await this.tensor(name);
    if (weight.dtype !== 'e4m3') return weight;
    const spec = this.spec(name);
    const fill = deviceFill(spec, this.seed, this.gains[spec.part]);
    if (fill.kind !== 'e4m3') throw new DramaError('SYNTHETIC_FILL_MISMATCH', `${name}`, { kind: 'internal' });
    const shape = blockScaleShape(spec.shape[0]!, spec.shape[1]!);
    const scales = this.carve('f32', shape, this.arenaFor(spec));
    synthFillBlockScales(this.cuda, { out: scales.data.pointer, count: shapeElements(shape), fill: fill.scales });
    return { ...weight, scales };
  }

  async swiGlu(names: SwiGluNames): Promise<SwiGluWeights<CudaBuffer>> {
    return {
      gate: await this.linear(names.gateProj),
      up: await this.linear(names.upProj),
      down: await this.linear(names.downProj),
    };
  }

  /** Bytes of every tensor drawn so far, and of the device allocations holding them. */
  get bytes(): { tensors: number; allocated: number } {
    const arenas = [this.arena, this.expertArena];
    return {
      tensors: arenas.reduce((sum, arena) => sum + arena.tensorBytes, 0),
      allocated: arenas.reduce((sum, arena) => sum + arena.heldBytes, 0),
    };
  }

  /** Waits for the fills (the code table is freed after them); the tensors stay until release. */
  finish(): void {
    this.cuda.synchronize();
    this.codeTable.free();
  }

  release(): void {
    this.cuda.synchronize();
    this.codeTable.free();
    this.arena.release();
    this.expertArena.release();
  }

  private counted(bytes: number): void {
    this.drawn.tensors += 1;
    this.drawn.bytes += bytes;
    this.onTensor?.(this.drawn);
  }

  private spec(name: string): TensorSpec {
    const spec = this.specs.get(name);
    if (spec === undefined) {
      throw new DramaError('TENSOR_NOT_DECLARED', `tensor ${name} is not in the weight map`, { kind: 'internal' });
    }
    return spec;
  }

  private arenaFor(spec: TensorSpec): DeviceArena {
    return isRoutedExpert(spec) ? this.expertArena : this.arena;
  }

  /** Gives back a tensor drawn here (the MoE block's packed copy replaces the routed experts); false if not ours. */
  giveBack(pointer: bigint): boolean {
    return this.expertArena.giveBack(pointer) || this.arena.giveBack(pointer);
  }

  private carve(dtype: DType, shape: readonly number[], arena: DeviceArena = this.arena): CudaTensor {
    const elements = shapeElements(shape);
    const bytes = elements * elementBytes(dtype);
    const data: CudaBuffer = { pointer: arena.carve(bytes), dtype, elements };
    this.counted(bytes);
    return { dtype, shape, data };
  }

  private hostDrawn(spec: TensorSpec): Tensor<CudaBuffer> {
    if (spec.dtype !== 'BF16') {
      throw new DramaError('SYNTHETIC_FILL_MISMATCH', `${spec.name} is ${spec.dtype}; host draws are bf16`, {
        kind: 'internal',
      });
    }
    const values = initialValues(spec, this.seed, this.gains[spec.part]);
    this.counted(values.length * 2);
    return this.upload({
      dtype: 'bf16',
      shape: spec.shape,
      elements: tensorElements(float32ToTensor(values, 'BF16', spec.shape)),
    });
  }
}

/** The routed experts' weights and block scales (not the shared expert). */
function isRoutedExpert(spec: TensorSpec): boolean {
  return spec.role === 'expert' || spec.role === 'expert_scale';
}
