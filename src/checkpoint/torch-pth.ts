// torch.save checkpoints (`.pth`, the zip format): `<archive>/data.pkl` (the pickled state dict), `byteorder`,
// `version` (plus `.format_version`, `.storage_alignment`), and one stored entry `data/<key>` per storage.
// Reading unpickles under the restricted reader, then range-reads each tensor's bytes from its storage entry in
// place; a strided view becomes a contiguous copy. Reading the shapes alone stops after the pickle.
// Nested dicts are flattened with '.'; non-tensor leaves (version numbers, hyper-parameters) are skipped.
import { DramaError } from '../errors.ts';
import { PickleDict, readPickle } from './pickle-reader.ts';
import { PickleWriter } from './pickle-writer.ts';
import { openRegularFile } from './regular-file.ts';
import { dtypeByteSize, elementCount, type HostTensor, makeTensor } from './tensor.ts';
import { DTYPE_NAME_OF, STORAGE_CLASS_OF, TensorView, torchUnpickling } from './torch-globals.ts';
import { ZipReader } from './zip-reader.ts';
import { ZipWriter } from './zip-writer.ts';

const MAX_PICKLE_BYTES = 1 << 30;
const ARCHIVE_NAME = 'archive';

function refuse(code: string, path: string, message: string): never {
  throw new DramaError(code, `${path}: ${message}`, { kind: 'bad_checkpoint', param: path });
}

/** The folder every entry lives under: torch names it after the archive (`archive/` in current releases). */
function archivePrefix(zip: ZipReader): string {
  const pickles = zip.names().filter((name) => /^[^/]+\/data\.pkl$/.test(name));
  if (pickles.length !== 1) {
    refuse('TORCH_NO_PICKLE', zip.path, `expected one <archive>/data.pkl entry, found ${pickles.length}`);
  }
  return pickles[0]!.slice(0, -'data.pkl'.length);
}

function flattenStateDict(root: unknown, path: string): Map<string, TensorView> {
  if (!(root instanceof PickleDict))
    refuse('TORCH_NOT_STATE_DICT', path, 'the pickled object is not a dict of tensors');
  const views = new Map<string, TensorView>();
  const visit = (dict: PickleDict, prefix: string): void => {
    for (const [key, value] of dict) {
      const name = `${prefix}${String(key)}`;
      if (value instanceof PickleDict) visit(value, `${name}.`);
      else if (value instanceof TensorView) {
        if (views.has(name)) refuse('TORCH_DUPLICATE_NAME', path, `two tensors flatten to the name ${name}`);
        views.set(name, value);
      }
    }
  };
  visit(root as PickleDict, '');
  return views;
}

function isContiguous(view: TensorView): boolean {
  let expected = 1;
  for (let dimension = view.size.length - 1; dimension >= 0; dimension--) {
    if (view.size[dimension]! !== 1 && view.stride[dimension]! !== expected) return false;
    expected *= view.size[dimension]!;
  }
  return true;
}

/** Copies a strided view (element offsets relative to `span`'s first element) into row-major order. */
function gatherStrided(span: Uint8Array, view: TensorView, elementBytes: number, out: Uint8Array): void {
  const rank = view.size.length;
  const index = new Array<number>(rank).fill(0);
  const count = elementCount(view.size);
  let source = 0;
  for (let element = 0; element < count; element++) {
    out.set(span.subarray(source * elementBytes, (source + 1) * elementBytes), element * elementBytes);
    for (let dimension = rank - 1; dimension >= 0; dimension--) {
      index[dimension]!++;
      source += view.stride[dimension]!;
      if (index[dimension]! < view.size[dimension]!) break;
      source -= index[dimension]! * view.stride[dimension]!;
      index[dimension] = 0;
    }
  }
}

async function materialize(zip: ZipReader, prefix: string, name: string, view: TensorView): Promise<HostTensor> {
  const elementBytes = dtypeByteSize(view.dtype);
  const data = new Uint8Array(elementCount(view.size) * elementBytes);
  if (data.byteLength === 0) return makeTensor(view.dtype, view.size, data);
  let lastElement = view.offset;
  for (let dimension = 0; dimension < view.size.length; dimension++) {
    lastElement += (view.size[dimension]! - 1) * view.stride[dimension]!;
  }
  const spanStart = view.offset * elementBytes;
  const spanEnd = (lastElement + 1) * elementBytes;
  if (spanEnd > view.storage.byteLength) {
    refuse(
      'TORCH_VIEW_OUT_OF_RANGE',
      zip.path,
      `tensor ${name} reaches byte ${spanEnd} of storage ${view.storage.key}, which holds ${view.storage.byteLength}`,
    );
  }
  const entryName = `${prefix}data/${view.storage.key}`;
  const entry = zip.info(entryName);
  if (entry === undefined)
    refuse('TORCH_STORAGE_MISSING', zip.path, `tensor ${name} needs the missing entry ${entryName}`);
  if (entry.size < view.storage.byteLength) {
    refuse(
      'TORCH_STORAGE_SIZE_MISMATCH',
      zip.path,
      `entry ${entryName} holds ${entry.size} bytes, the pickle says ${view.storage.byteLength}`,
    );
  }
  if (isContiguous(view)) {
    await zip.readStored(entryName, spanStart, data);
  } else {
    const span = new Uint8Array(spanEnd - spanStart);
    await zip.readStored(entryName, spanStart, span);
    gatherStrided(span, view, elementBytes, data);
  }
  return makeTensor(view.dtype, view.size, data);
}

/** Refuses the pre-zip torch.save format (a bare pickle stream) by name rather than as a broken zip. */
async function refuseLegacyFormat(path: string): Promise<void> {
  const handle = await openRegularFile(
    path,
    (file, reason) =>
      new DramaError('TORCH_FILE_NOT_FOUND', `${file}: cannot open (${reason})`, { kind: 'not_found', param: file }),
  );
  try {
    const first = new Uint8Array(2);
    const { bytesRead } = await handle.read(first, 0, 2, 0);
    if (bytesRead === 2 && first[0] === 0x80 && first[1]! <= 5) {
      refuse('TORCH_LEGACY_FORMAT', path, 'is a pre-1.6 torch.save pickle stream; re-save it with a current torch');
    }
  } finally {
    await handle.close();
  }
}

/** The archive's entry folder and its state dict's tensor views (names, dtypes, shapes, where their bytes are). */
async function readViews(zip: ZipReader, path: string): Promise<{ prefix: string; views: Map<string, TensorView> }> {
  const prefix = archivePrefix(zip);
  if (zip.info(`${prefix}byteorder`) !== undefined) {
    const order = new TextDecoder().decode(await zip.readWhole(`${prefix}byteorder`, 16)).trim();
    if (order !== 'little') refuse('TORCH_BIG_ENDIAN', path, `byte order is "${order}", only little-endian is read`);
  }
  const pickle = await zip.readWhole(`${prefix}data.pkl`, MAX_PICKLE_BYTES);
  const { globals, persistentLoad } = torchUnpickling(path);
  return { prefix, views: flattenStateDict(readPickle(pickle, { globals, persistentLoad, source: path }), path) };
}

export async function readTorchCheckpoint(path: string): Promise<Map<string, HostTensor>> {
  await refuseLegacyFormat(path);
  const zip = await ZipReader.open(path);
  try {
    const { prefix, views } = await readViews(zip, path);
    const tensors = new Map<string, HostTensor>();
    for (const [name, view] of views) tensors.set(name, await materialize(zip, prefix, name, view));
    return tensors;
  } finally {
    await zip.close();
  }
}

/** Each tensor's shape by name, from the pickle alone: no tensor's bytes are read. */
export async function readTorchShapes(path: string): Promise<Map<string, readonly number[]>> {
  await refuseLegacyFormat(path);
  const zip = await ZipReader.open(path);
  try {
    const { views } = await readViews(zip, path);
    return new Map([...views].map(([name, view]) => [name, view.size]));
  } finally {
    await zip.close();
  }
}

/** Row-major strides of a shape, in elements. */
function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let dimension = shape.length - 1; dimension >= 0; dimension--) {
    strides[dimension] = stride;
    stride *= shape[dimension]!;
  }
  return strides;
}

/** `_rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())`, or v3 with the dtype for float8. */
function pickleTensor(writer: PickleWriter, tensor: HostTensor, key: string): void {
  const untyped = tensor.dtype === 'F8_E4M3';
  writer.global('torch._utils', untyped ? '_rebuild_tensor_v3' : '_rebuild_tensor_v2').mark();
  const storageElements = untyped ? tensor.data.byteLength : elementCount(tensor.shape);
  const [storageModule, storageClass] = STORAGE_CLASS_OF[tensor.dtype];
  writer.mark().string('storage').global(storageModule, storageClass).string(key).string('cpu');
  writer.integer(storageElements).tuple().persistentId();
  writer.integer(0).integerTuple(tensor.shape).integerTuple(contiguousStrides(tensor.shape)).boolean(false);
  writer.global('collections', 'OrderedDict').emptyTuple().reduce();
  if (untyped) writer.global('torch', DTYPE_NAME_OF[tensor.dtype]);
  writer.tuple().reduce();
}

/** Writes a flat state dict (an OrderedDict of contiguous tensors) that torch.load(weights_only=True) accepts. */
export async function writeTorchCheckpoint(path: string, tensors: Map<string, HostTensor>): Promise<void> {
  const checked = [...tensors].map(([name, t]) => [name, makeTensor(t.dtype, t.shape, t.data)] as const);
  const writer = new PickleWriter().global('collections', 'OrderedDict').emptyTuple().reduce();
  if (checked.length > 0) {
    writer.mark();
    checked.forEach(([name, tensor], index) => {
      writer.string(name);
      pickleTensor(writer, tensor, String(index));
    });
    writer.setItems();
  }
  const zip = await ZipWriter.create(path);
  try {
    const encoder = new TextEncoder();
    await zip.add(`${ARCHIVE_NAME}/data.pkl`, [writer.finish()]);
    await zip.add(`${ARCHIVE_NAME}/.format_version`, [encoder.encode('1')]);
    await zip.add(`${ARCHIVE_NAME}/.storage_alignment`, [encoder.encode('64')]);
    await zip.add(`${ARCHIVE_NAME}/byteorder`, [encoder.encode('little')]);
    for (const [index, [, tensor]] of checked.entries()) await zip.add(`${ARCHIVE_NAME}/data/${index}`, [tensor.data]);
    await zip.add(`${ARCHIVE_NAME}/version`, [encoder.encode('3\n')]);
    await zip.finish();
  } catch (error) {
    await zip.abort();
    throw error;
  }
}
