// Frames → PCM audio events, per request and in order, each request's terminal event (finished or failed) after
// its audio. The inline decoder runs the codec in the calling thread; the threaded one (decode-thread.ts) runs it
// beside the engine so that decoding overlaps the next frame rounds. Frames are [K] int32; PCM mono fp32.
import type { CodecStream, Frame } from '../model/types.ts';
import { CODES_PER_FRAME } from '../shared/frame.ts';
import { serializeError } from '../threads/serialize-error.ts';
import type { EngineEvent } from './protocol.ts';
import type { EngineCodec } from './runtime.ts';

/** The events that end a request whose audio went through the decoder. */
export type TerminalEvent = Extract<EngineEvent, { type: 'finished' | 'failed' }>;

export interface FrameDecoder {
  open(id: number): void;
  /** Decodes a group of frames; its `audio` event follows. */
  decode(id: number, frames: readonly Frame[]): void;
  /** Emits the request's terminal event after its audio, and forgets its stream. */
  end(event: TerminalEvent): void;
  /** Forgets a cancelled request's stream; audio still in flight for it is dropped by the host. */
  drop(id: number): void;
  close(): Promise<void>;
}

/** [N] frames of [K] codes → one [N, K] row-major array (an audio event's `codes`, a decode command's payload). */
export function joinFrames(frames: readonly Frame[]): Int32Array<ArrayBuffer> {
  const codes = new Int32Array(frames.length * CODES_PER_FRAME);
  for (const [index, frame] of frames.entries()) codes.set(frame, index * CODES_PER_FRAME);
  return codes;
}

/** One [N, K] row-major array → [N] frames of [K] codes (views, not copies). */
export function splitFrames(codes: Int32Array): Frame[] {
  const frames: Frame[] = [];
  for (let row = 0; row < codes.length; row += CODES_PER_FRAME) frames.push(codes.subarray(row, row + CODES_PER_FRAME));
  return frames;
}

export class InlineFrameDecoder implements FrameDecoder {
  private readonly streams = new Map<number, CodecStream>();
  /** Requests whose decode failed: their later frames are ignored and their end becomes that failure. */
  private readonly failed = new Map<number, TerminalEvent>();

  constructor(
    private readonly codec: EngineCodec,
    private readonly emit: (event: EngineEvent) => void,
  ) {}

  open(id: number): void {
    try {
      this.streams.set(id, this.codec.openStream());
    } catch (error) {
      // No stream (a GPU codec with every lane busy): the request's frames are ignored and its end is this failure.
      this.failed.set(id, { type: 'failed', id, error: serializeError(error) });
    }
  }

  decode(id: number, frames: readonly Frame[]): void {
    const stream = this.streams.get(id);
    if (stream === undefined || frames.length === 0) return;
    try {
      this.emit({ type: 'audio', id, pcm: stream.push(frames), frames: frames.length, codes: joinFrames(frames) });
    } catch (error) {
      this.fail(id, error);
    }
  }

  /**
   * Decodes several requests' groups, in order: through the codec's one pass for many streams where it has one
   * (a request appearing twice waits for the next pass), else one push each.
   */
  decodeMany(groups: readonly { id: number; frames: readonly Frame[] }[]): void {
    const decodeTogether = this.codec.decodeTogether?.bind(this.codec);
    if (decodeTogether === undefined) {
      for (const { id, frames } of groups) this.decode(id, frames);
      return;
    }
    let pending = groups.filter(({ id, frames }) => this.streams.has(id) && frames.length > 0);
    while (pending.length > 0) {
      const pass: typeof pending = [];
      const later: typeof pending = [];
      const seen = new Set<number>();
      for (const group of pending) {
        if (seen.has(group.id)) later.push(group);
        else {
          seen.add(group.id);
          pass.push(group);
        }
      }
      let results: (Float32Array | Error)[];
      try {
        results = decodeTogether(pass.map(({ id, frames }) => ({ stream: this.streams.get(id)!, frames })));
      } catch (error) {
        results = pass.map(() => (error instanceof Error ? error : new Error(String(error))));
      }
      pass.forEach(({ id, frames }, index) => {
        const result = results[index]!;
        if (result instanceof Error) this.fail(id, result);
        else if (this.streams.has(id)) {
          this.emit({ type: 'audio', id, pcm: result, frames: frames.length, codes: joinFrames(frames) });
        }
      });
      pending = later.filter(({ id }) => this.streams.has(id));
    }
  }

  private fail(id: number, error: unknown): void {
    this.closeStream(id);
    this.failed.set(id, { type: 'failed', id, error: serializeError(error) });
  }

  private closeStream(id: number): void {
    this.streams.get(id)?.close?.();
    this.streams.delete(id);
  }

  end(event: TerminalEvent): void {
    const failure = this.failed.get(event.id);
    this.failed.delete(event.id);
    this.closeStream(event.id);
    this.emit(failure ?? event);
  }

  drop(id: number): void {
    this.closeStream(id);
    this.failed.delete(id);
  }

  async close(): Promise<void> {
    for (const id of [...this.streams.keys()]) this.closeStream(id);
  }
}
