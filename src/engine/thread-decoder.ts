// The engine thread's handle on the decode thread: frame groups go out as one [N, K] int32 array each; audio and
// terminal events go from the decode thread straight to the main thread on the port handed over at start, and only
// a request's settling comes back here. If the decode thread dies, its open requests fail by name (through `emit`)
// and later ones are failed at their end instead of hanging.
import type { MessagePort, Worker } from 'node:worker_threads';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { startTypeScriptWorker } from '../threads/start-worker.ts';
import type { DecodeCommand, DecodeReply } from './decode-thread.ts';
import { type FrameDecoder, joinFrames, type TerminalEvent } from './frame-decoder.ts';
import type { RuntimeSpec } from './load-runtime.ts';
import type { EngineEvent } from './protocol.ts';

export class ThreadFrameDecoder implements FrameDecoder {
  private readonly openIds = new Set<number>();
  private broken: string | undefined;
  private closing = false;

  private constructor(
    private readonly worker: Worker,
    private readonly emit: (event: EngineEvent) => void,
    onDeath: (reason: string) => void,
  ) {
    worker.on('message', (reply: DecodeReply) => {
      if (reply.type === 'settled') this.openIds.delete(reply.id);
    });
    worker.on('exit', (code) => {
      if (this.closing) return;
      const reason = `the decode thread exited with code ${code}`;
      this.fail(reason);
      onDeath(reason);
    });
  }

  /**
   * `audio`: the main thread's port for decoded audio and terminal events (moved to the decode thread). `emit`: the
   * engine thread's own events, which carry a dead decode thread's failures. `onDeath` runs after the open requests
   * have failed, when the decode thread ends without being asked.
   */
  static start(
    spec: RuntimeSpec,
    audio: MessagePort,
    emit: (event: EngineEvent) => void,
    onDeath: (reason: string) => void,
  ): Promise<ThreadFrameDecoder> {
    const worker = startTypeScriptWorker(new URL('./decode-thread.ts', import.meta.url), { spec, audio }, [audio]);
    return new Promise((resolve, reject) => {
      const onReply = (reply: DecodeReply) => {
        if (reply.type === 'decoder-ready') resolve(new ThreadFrameDecoder(worker, emit, onDeath));
        else if (reply.type === 'decoder-failed')
          reject(new DramaError(reply.error.code, reply.error.message, { kind: 'internal' }));
        else return;
        worker.off('message', onReply);
      };
      worker.on('message', onReply);
      worker.once('error', reject);
    });
  }

  open(id: number): void {
    this.openIds.add(id);
    this.send({ type: 'open', id });
  }

  decode(id: number, frames: readonly Frame[]): void {
    const codes = joinFrames(frames);
    this.send({ type: 'decode', id, codes }, [codes.buffer]);
  }

  end(event: TerminalEvent): void {
    if (this.broken !== undefined) {
      this.emit({ type: 'failed', id: event.id, error: this.crashError() });
      return;
    }
    this.send({ type: 'end', event });
  }

  drop(id: number): void {
    this.openIds.delete(id);
    this.send({ type: 'drop', id });
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.worker.terminate();
  }

  private send(command: DecodeCommand, transfer: ArrayBuffer[] = []): void {
    if (this.broken === undefined) this.worker.postMessage(command, transfer);
  }

  private crashError() {
    return { code: 'DECODER_CRASHED', message: this.broken ?? '', kind: 'internal', param: undefined };
  }

  private fail(reason: string): void {
    this.broken = reason;
    for (const id of this.openIds) this.emit({ type: 'failed', id, error: this.crashError() });
    this.openIds.clear();
  }
}
