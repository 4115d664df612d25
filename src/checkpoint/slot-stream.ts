// Streams checkpoint tensors' bytes in file order through two host slots: one slot is read into while the other's
// bytes are consumed (on CUDA an async copy to the device), so host memory holds the two slots, never the
// checkpoint. Each read fills one window of a shard (a slot's length, aligned for O_DIRECT); a tensor larger than a
// slot goes through in pieces and a window holds the ends of several tensors. The consumer returns a wait that ends
// when the slot may be refilled; the stream waits on it before reading into that slot again.
import { DramaError } from '../errors.ts';
import {
  alignDown,
  alignUp,
  DIRECT_ALIGNMENT,
  type FileAccess,
  isInvalidArgument,
  type OpenedShard,
  openShard,
  reopenBuffered,
  systemFileAccess,
} from './direct-read.ts';

/** Where one tensor's bytes lie. */
export interface StreamedTensor {
  readonly name: string;
  readonly file: string;
  readonly fileOffset: number;
  readonly byteLength: number;
}

/** One tensor's bytes [tensorOffset, tensorOffset + bytes.byteLength), lying in a slot. */
export interface SlotPiece {
  readonly tensor: StreamedTensor;
  readonly tensorOffset: number;
  readonly bytes: Uint8Array;
}

/** Consumes one slot's pieces; the returned wait ends when the slot's bytes have been read and it may be refilled. */
export type SlotConsumer = (pieces: readonly SlotPiece[]) => () => void | Promise<void>;

export interface StreamOptions {
  /** Try O_DIRECT first (default true). */
  readonly direct?: boolean;
  readonly access?: FileAccess;
  /** Said once per file whose O_DIRECT open or read was refused. */
  readonly notice?: (message: string) => void;
  readonly onProgress?: (bytesDone: number, totalBytes: number) => void;
  /** Most bytes one read asks for (a multiple of the page); a window's reads run together. */
  readonly readPieceBytes?: number;
}

export interface StreamReport {
  readonly bytes: number;
  readonly windows: number;
  /** Files read with O_DIRECT throughout, and files read through the page cache. */
  readonly directFiles: readonly string[];
  readonly bufferedFiles: readonly string[];
}

interface Window {
  readonly start: number;
  /** First and one past the last byte any piece needs. */
  readonly from: number;
  readonly to: number;
  readonly pieces: readonly { tensor: StreamedTensor; from: number; to: number }[];
}

/** The windows of one file's tensors (sorted by offset), each at most `slotBytes` long from an aligned start. */
function* windowsOf(tensors: readonly StreamedTensor[], slotBytes: number): Generator<Window> {
  let index = 0;
  let need = tensors[0]?.fileOffset ?? 0;
  while (index < tensors.length) {
    const start = alignDown(need);
    const end = start + slotBytes;
    const pieces: { tensor: StreamedTensor; from: number; to: number }[] = [];
    while (index < tensors.length && tensors[index]!.fileOffset < end) {
      const tensor = tensors[index]!;
      const from = Math.max(tensor.fileOffset, need);
      const tensorEnd = tensor.fileOffset + tensor.byteLength;
      const to = Math.min(tensorEnd, end);
      if (to > from) pieces.push({ tensor, from, to });
      if (tensorEnd > end) break;
      index += 1;
      need = tensors[index]?.fileOffset ?? need;
    }
    if (index < tensors.length && tensors[index]!.fileOffset < end) need = end;
    if (pieces.length > 0) yield { start, from: pieces[0]!.from, to: pieces.at(-1)!.to, pieces };
  }
}

function tensorAt(window: Window, position: number): string {
  return (window.pieces.find((piece) => piece.to > position) ?? window.pieces.at(-1)!).tensor.name;
}

function truncated(file: string, window: Window, position: number): DramaError {
  return new DramaError(
    'CHECKPOINT_TRUNCATED',
    `${file} ends at byte ${position}, inside tensor ${tensorAt(window, position)} (its bytes run to ${window.to})`,
    { kind: 'bad_checkpoint', param: file },
  );
}

function readFailed(file: string, window: Window, position: number, error: unknown): DramaError {
  const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return new DramaError(
    'CHECKPOINT_READ_FAILED',
    `${file}: reading tensor ${tensorAt(window, position)} at byte ${position} failed (${reason})`,
    { kind: 'bad_checkpoint', param: file, cause: error },
  );
}

/** Largest single read: a window is read as several of these at once, so that the disk sees a deep queue. */
const READ_PIECE_BYTES = 16 * 1024 * 1024;

/** Reads file bytes [from, to) into `slot` (whose byte 0 is file byte `window.start`), needing [from, need). */
async function readRange(
  shard: OpenedShard,
  file: string,
  window: Window,
  slot: Uint8Array,
  range: { from: number; to: number; need: number },
): Promise<void> {
  let done = range.from;
  while (done < range.need) {
    const target = slot.subarray(done - window.start, range.to - window.start);
    let bytesRead: number;
    try {
      bytesRead = await shard.handle.read(target, done);
    } catch (error) {
      if (shard.direct && isInvalidArgument(error)) throw error;
      throw readFailed(file, window, done, error);
    }
    if (bytesRead === 0) throw truncated(file, window, done);
    done += bytesRead;
    // An unaligned short O_DIRECT read is the end of the file.
    if (shard.direct && done < range.need && done % DIRECT_ALIGNMENT !== 0) throw truncated(file, window, done);
  }
}

/** Reads `window` into `slot`: the aligned superset with O_DIRECT, exactly the needed bytes otherwise. */
async function readWindow(
  shard: OpenedShard,
  file: string,
  window: Window,
  slot: Uint8Array,
  pieceBytes: number,
): Promise<void> {
  const first = shard.direct ? window.start : window.from;
  const last = shard.direct ? alignUp(window.to) : window.to;
  const ranges: { from: number; to: number; need: number }[] = [];
  for (let from = first; from < window.to; from += pieceBytes) {
    const to = Math.min(from + pieceBytes, last);
    ranges.push({ from, to, need: Math.min(to, window.to) });
  }
  // Every read settles before an error is thrown: none may still write into a slot its caller is about to free.
  const results = await Promise.allSettled(ranges.map((range) => readRange(shard, file, window, slot, range)));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}

function requireSlots(slots: readonly Uint8Array[]): number {
  const slotBytes = slots[0]?.byteLength ?? 0;
  if (slots.length !== 2 || slots[1]!.byteLength !== slotBytes || slotBytes < DIRECT_ALIGNMENT) {
    throw new DramaError('STREAM_SLOTS_INVALID', 'the stream takes two slots of one length, at least one page', {
      kind: 'internal',
    });
  }
  if (slotBytes % DIRECT_ALIGNMENT !== 0) {
    throw new DramaError('STREAM_SLOTS_INVALID', `slot length ${slotBytes} is not a multiple of ${DIRECT_ALIGNMENT}`, {
      kind: 'internal',
    });
  }
  return slotBytes;
}

/** The tensors grouped by file (files in name order), each file's sorted by offset. */
export function fileOrder(tensors: readonly StreamedTensor[]): Map<string, StreamedTensor[]> {
  const byFile = new Map<string, StreamedTensor[]>();
  for (const tensor of [...tensors].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))) {
    const list = byFile.get(tensor.file) ?? [];
    list.push(tensor);
    byFile.set(tensor.file, list);
  }
  for (const list of byFile.values()) list.sort((a, b) => a.fileOffset - b.fileOffset);
  return byFile;
}

/** Waits for both slots' consumers: the slots are the caller's to free, and no copy may still read them then. */
async function drain(waits: ((() => void | Promise<void>) | undefined)[], failing: boolean): Promise<void> {
  for (const wait of waits.splice(0)) {
    try {
      await wait?.();
    } catch (error) {
      // A load already failing reports its own error.
      if (!failing) throw error;
    }
  }
}

/** Streams every tensor's bytes through `slots` (two, page-aligned, one length) into `consume`, in file order. */
export async function streamTensors(
  tensors: readonly StreamedTensor[],
  slots: readonly Uint8Array[],
  consume: SlotConsumer,
  options: StreamOptions = {},
): Promise<StreamReport> {
  const slotBytes = requireSlots(slots);
  const pieceBytes = alignUp(options.readPieceBytes ?? READ_PIECE_BYTES);
  const access = options.access ?? systemFileAccess;
  const notice = options.notice ?? (() => {});
  const totalBytes = tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0);
  const waits: ((() => void | Promise<void>) | undefined)[] = [undefined, undefined];
  const report = { bytes: 0, windows: 0, directFiles: [] as string[], bufferedFiles: [] as string[] };
  try {
    for (const [file, list] of fileOrder(tensors)) {
      let shard = await openShard(access, file, options.direct ?? true, notice);
      try {
        for (const window of windowsOf(list, slotBytes)) {
          const turn = report.windows % 2;
          const wait = waits[turn];
          waits[turn] = undefined;
          await wait?.();
          const slot = slots[turn]!;
          try {
            await readWindow(shard, file, window, slot, pieceBytes);
          } catch (error) {
            if (!(shard.direct && isInvalidArgument(error))) throw error;
            shard = await reopenBuffered(access, file, shard, notice);
            await readWindow(shard, file, window, slot, pieceBytes);
          }
          const pieces = window.pieces.map(({ tensor, from, to }) => ({
            tensor,
            tensorOffset: from - tensor.fileOffset,
            bytes: slot.subarray(from - window.start, to - window.start),
          }));
          waits[turn] = consume(pieces);
          report.windows += 1;
          report.bytes += window.pieces.reduce((sum, piece) => sum + piece.to - piece.from, 0);
          options.onProgress?.(report.bytes, totalBytes);
        }
      } finally {
        await shard.handle.close();
      }
      (shard.direct ? report.directFiles : report.bufferedFiles).push(file);
    }
  } catch (error) {
    await drain(waits, true);
    throw error;
  }
  await drain(waits, false);
  return report;
}
