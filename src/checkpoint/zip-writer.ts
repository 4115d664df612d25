// A minimal zip writer for torch checkpoints: every entry stored (method 0), its data start padded to 64 bytes
// with an extra field (as torch.save does, so loaders can map storages in place), CRC-32 filled in.
// The archive is written under a temporary name and renamed into place by finish(); abort() leaves nothing.
// No zip64: an archive past 4 GiB or 65535 entries is refused by name.
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { DramaError } from '../errors.ts';

const DATA_ALIGNMENT = 64;
const LOCAL_HEADER_BYTES = 30;
const CENTRAL_HEADER_BYTES = 46;
const END_RECORD_BYTES = 22;
const PADDING_FIELD_HEADER_BYTES = 4;
const PADDING_FIELD_ID = 0x4246; // 'FB', the id torch uses for its alignment padding
const ZIP32_LIMIT = 0xffffffff;
const MAX_WRITE_BYTES = 1 << 30; // fs writes cap near 2 GiB per call
// 1980-01-01 00:00, the earliest DOS date: fixed so that the same tensors give the same bytes.
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;

interface CentralRecord {
  readonly name: Uint8Array;
  readonly crc: number;
  readonly size: number;
  readonly localHeaderOffset: number;
}

export class ZipWriter {
  private readonly records: CentralRecord[] = [];
  private offset = 0;
  private closed = false;

  private constructor(
    private readonly handle: FileHandle,
    private readonly finalPath: string,
    private readonly temporaryPath: string,
  ) {}

  static async create(path: string): Promise<ZipWriter> {
    const temporaryPath = `${path}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
    return new ZipWriter(await open(temporaryPath, 'wx'), path, temporaryPath);
  }

  /** Appends one stored entry whose data is the concatenation of `parts`. */
  async add(name: string, parts: readonly Uint8Array[]): Promise<void> {
    const nameBytes = new TextEncoder().encode(name);
    let size = 0;
    let crc = 0;
    for (const part of parts) {
      size += part.byteLength;
      crc = crc32(part, crc);
    }
    const headerEnd = this.offset + LOCAL_HEADER_BYTES + nameBytes.byteLength;
    const paddingBytes =
      (DATA_ALIGNMENT - ((headerEnd + PADDING_FIELD_HEADER_BYTES) % DATA_ALIGNMENT)) % DATA_ALIGNMENT;
    const extra = new Uint8Array(PADDING_FIELD_HEADER_BYTES + paddingBytes);
    const extraView = new DataView(extra.buffer);
    extraView.setUint16(0, PADDING_FIELD_ID, true);
    extraView.setUint16(2, paddingBytes, true);
    extra.fill(0x5a, PADDING_FIELD_HEADER_BYTES); // 'Z', as torch pads
    this.checkLimit(headerEnd + extra.byteLength + size, name);

    const header = new Uint8Array(LOCAL_HEADER_BYTES + nameBytes.byteLength);
    const view = new DataView(header.buffer);
    view.setUint32(0, 0x04034b50, true);
    view.setUint16(4, 20, true); // version needed: 2.0
    view.setUint16(6, 0, true); // flags
    view.setUint16(8, 0, true); // method: stored
    view.setUint16(10, DOS_TIME, true);
    view.setUint16(12, DOS_DATE, true);
    view.setUint32(14, crc, true);
    view.setUint32(18, size, true);
    view.setUint32(22, size, true);
    view.setUint16(26, nameBytes.byteLength, true);
    view.setUint16(28, extra.byteLength, true);
    header.set(nameBytes, LOCAL_HEADER_BYTES);

    this.records.push({ name: nameBytes, crc, size, localHeaderOffset: this.offset });
    await this.write(header);
    await this.write(extra);
    for (const part of parts) await this.write(part);
  }

  /** Writes the central directory, closes the file and renames it into place. */
  async finish(): Promise<void> {
    if (this.records.length > 0xffff) {
      await this.abort();
      throw new DramaError('ZIP_TOO_LARGE', `${this.finalPath}: ${this.records.length} entries need zip64`, {
        kind: 'internal',
        param: this.finalPath,
      });
    }
    const directoryOffset = this.offset;
    for (const record of this.records) {
      const header = new Uint8Array(CENTRAL_HEADER_BYTES + record.name.byteLength);
      const view = new DataView(header.buffer);
      view.setUint32(0, 0x02014b50, true);
      view.setUint16(4, 20, true); // version made by
      view.setUint16(6, 20, true); // version needed
      view.setUint16(8, 0, true);
      view.setUint16(10, 0, true);
      view.setUint16(12, DOS_TIME, true);
      view.setUint16(14, DOS_DATE, true);
      view.setUint32(16, record.crc, true);
      view.setUint32(20, record.size, true);
      view.setUint32(24, record.size, true);
      view.setUint16(28, record.name.byteLength, true);
      // extra length, comment length, disk number, internal and external attributes stay 0
      view.setUint32(42, record.localHeaderOffset, true);
      header.set(record.name, CENTRAL_HEADER_BYTES);
      await this.write(header);
    }
    const directoryBytes = this.offset - directoryOffset;
    this.checkLimit(this.offset + END_RECORD_BYTES, 'central directory');
    const end = new Uint8Array(END_RECORD_BYTES);
    const view = new DataView(end.buffer);
    view.setUint32(0, 0x06054b50, true);
    view.setUint16(8, this.records.length, true);
    view.setUint16(10, this.records.length, true);
    view.setUint32(12, directoryBytes, true);
    view.setUint32(16, directoryOffset, true);
    await this.write(end);
    this.closed = true;
    await this.handle.sync();
    await this.handle.close();
    await rename(this.temporaryPath, this.finalPath);
  }

  /** Closes and deletes the partial file; safe to call after a failed add or finish. */
  async abort(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => undefined);
    }
    await rm(this.temporaryPath, { force: true });
  }

  private checkLimit(endOffset: number, what: string): void {
    if (endOffset > ZIP32_LIMIT) {
      throw new DramaError(
        'ZIP_TOO_LARGE',
        `${this.finalPath}: ${what} ends at byte ${endOffset}, past the 4 GiB a zip without zip64 holds`,
        {
          kind: 'internal',
          param: this.finalPath,
        },
      );
    }
  }

  private async write(bytes: Uint8Array): Promise<void> {
    let done = 0;
    while (done < bytes.byteLength) {
      const length = Math.min(MAX_WRITE_BYTES, bytes.byteLength - done);
      const { bytesWritten } = await this.handle.write(bytes, done, length, this.offset + done);
      done += bytesWritten;
    }
    this.offset += bytes.byteLength;
  }
}
