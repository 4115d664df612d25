// The only Python globals a torch tensor state dict may name, and what each stands for when we unpickle it.
// A tensor is pickled as _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) over a
// typed storage (torch.FloatStorage, ...), or, for dtypes without a storage class (float8), as
// _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype[, metadata]) over
// torch.storage.UntypedStorage.
// The storage is a persistent id ('storage', class, key, location, numel) naming the zip entry `data/<key>`.
// Offsets, sizes and strides count elements of the tensor's dtype.
import { DramaError } from '../errors.ts';
import { type AllowedGlobal, globalValue, PickleDict } from './pickle-reader.ts';
import type { DType } from './tensor.ts';

/** A storage class or dtype global: `dtype` is undefined for the ones we cannot hold (float64, int8, ...). */
export interface TorchTypeName {
  readonly torchName: string;
  readonly dtype: DType | undefined;
  /** Bytes per storage element; 1 for torch.storage.UntypedStorage. */
  readonly elementBytes: number;
}

/** One `data/<key>` entry, shared by every tensor that views it. */
export class StorageReference {
  constructor(
    readonly key: string,
    readonly type: TorchTypeName,
    readonly byteLength: number,
  ) {}
}

/** A tensor as the pickle describes it: a strided view into a storage. */
export class TensorView {
  constructor(
    readonly storage: StorageReference,
    readonly dtype: DType,
    readonly offset: number,
    readonly size: readonly number[],
    readonly stride: readonly number[],
  ) {}
}

const storageClasses: readonly [string, DType | undefined, number][] = [
  ['FloatStorage', 'F32', 4],
  ['BFloat16Storage', 'BF16', 2],
  ['HalfStorage', 'F16', 2],
  ['LongStorage', 'I64', 8],
  ['IntStorage', 'I32', 4],
  ['ByteStorage', 'U8', 1],
  ['BoolStorage', 'U8', 1],
  ['DoubleStorage', undefined, 8],
  ['ShortStorage', undefined, 2],
  ['CharStorage', undefined, 1],
  ['storage.UntypedStorage', 'U8', 1],
];

const dtypeNames: readonly [string, DType | undefined, number][] = [
  ['float32', 'F32', 4],
  ['bfloat16', 'BF16', 2],
  ['float16', 'F16', 2],
  ['float8_e4m3fn', 'F8_E4M3', 1],
  ['int64', 'I64', 8],
  ['int32', 'I32', 4],
  ['uint8', 'U8', 1],
  ['bool', 'U8', 1],
  ['float64', undefined, 8],
  ['float8_e5m2', undefined, 1],
];

/** Our dtype → [module, class] of the storage torch.save uses for it (float8 has no typed storage class). */
export const STORAGE_CLASS_OF: Readonly<Record<DType, readonly [string, string]>> = {
  F32: ['torch', 'FloatStorage'],
  BF16: ['torch', 'BFloat16Storage'],
  F16: ['torch', 'HalfStorage'],
  I64: ['torch', 'LongStorage'],
  I32: ['torch', 'IntStorage'],
  U8: ['torch', 'ByteStorage'],
  F8_E4M3: ['torch.storage', 'UntypedStorage'],
};

export const DTYPE_NAME_OF: Readonly<Record<DType, string>> = {
  F32: 'float32',
  BF16: 'bfloat16',
  F16: 'float16',
  F8_E4M3: 'float8_e4m3fn',
  I64: 'int64',
  I32: 'int32',
  U8: 'uint8',
};

function malformed(source: string, message: string): never {
  throw new DramaError('TORCH_BAD_PICKLE', `${source}: ${message}`, { kind: 'bad_checkpoint', param: source });
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function countTuple(value: unknown, what: string, source: string): number[] {
  if (!Array.isArray(value) || !value.every(isCount)) malformed(source, `${what} is not a tuple of counts`);
  return [...(value as number[])];
}

function typeName(value: unknown, what: string, source: string): TorchTypeName {
  const named = globalValue(value) as TorchTypeName | undefined;
  if (named === undefined || typeof named.torchName !== 'string') malformed(source, `${what} is not a torch type`);
  return named;
}

function rebuildTensor(args: readonly unknown[], dtypeArgument: unknown, source: string): TensorView {
  const [storage, offset, size, stride] = args;
  if (!(storage instanceof StorageReference))
    malformed(source, 'a tensor is rebuilt from something that is not a storage');
  const reference = storage as StorageReference;
  const type = dtypeArgument === undefined ? reference.type : typeName(dtypeArgument, 'tensor dtype', source);
  if (type.dtype === undefined) {
    throw new DramaError('TORCH_UNSUPPORTED_DTYPE', `${source}: tensors of ${type.torchName} are not supported`, {
      kind: 'bad_checkpoint',
      param: source,
    });
  }
  if (!isCount(offset)) malformed(source, 'tensor storage offset is not a count');
  const sizes = countTuple(size, 'tensor size', source);
  const strides = countTuple(stride, 'tensor stride', source);
  if (sizes.length !== strides.length)
    malformed(source, `tensor has ${sizes.length} sizes but ${strides.length} strides`);
  return new TensorView(reference, type.dtype, offset as number, sizes, strides);
}

/** The allow-list for readPickle, plus the persistent_load that records each storage once. */
export function torchUnpickling(source: string): {
  globals: Map<string, AllowedGlobal>;
  persistentLoad: (pid: unknown) => unknown;
  storages: Map<string, StorageReference>;
} {
  const globals = new Map<string, AllowedGlobal>();
  for (const [name, dtype, elementBytes] of storageClasses) {
    globals.set(`torch.${name}`, { value: { torchName: `torch.${name}`, dtype, elementBytes } });
  }
  for (const [name, dtype, elementBytes] of dtypeNames) {
    globals.set(`torch.${name}`, { value: { torchName: `torch.${name}`, dtype, elementBytes } });
  }
  globals.set('torch._utils._rebuild_tensor_v2', {
    call: (args) => rebuildTensor(args.slice(0, 4), undefined, source),
  });
  globals.set('torch._utils._rebuild_tensor_v3', { call: (args) => rebuildTensor(args.slice(0, 4), args[6], source) });
  globals.set('torch._utils._rebuild_parameter', { call: (args) => args[0] });
  globals.set('torch._utils._rebuild_parameter_with_state', { call: (args) => args[0] });
  globals.set('collections.OrderedDict', {
    call: (args) => {
      if (args.length !== 0) malformed(source, 'OrderedDict is built with arguments');
      return new PickleDict();
    },
  });

  const storages = new Map<string, StorageReference>();
  const persistentLoad = (pid: unknown): StorageReference => {
    if (!Array.isArray(pid) || pid.length !== 5 || pid[0] !== 'storage')
      malformed(source, 'persistent id is not a storage');
    const [, storageClass, key, , count] = pid as unknown[];
    const type = typeName(storageClass, 'storage class', source);
    if (typeof key !== 'string' || !isCount(count)) malformed(source, 'storage id has no key or element count');
    const known = storages.get(key as string);
    if (known !== undefined) return known;
    const reference = new StorageReference(key as string, type, (count as number) * type.elementBytes);
    storages.set(reference.key, reference);
    return reference;
  };
  return { globals, persistentLoad, storages };
}
