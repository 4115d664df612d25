// The streams a context launches on: its own, and a side stream for independent work enqueued alongside it. In a
// captured graph an `alongside` is a fork and a join (event record, stream wait), so its two parts run together on
// the device; each part's launches and their order stay what they would be alone, so no output bit can change.
import type { CudaDriver, Handle } from './driver.ts';

type StreamDriver = Pick<
  CudaDriver,
  | 'createStream'
  | 'destroyStream'
  | 'synchronizeStream'
  | 'createEvent'
  | 'destroyEvent'
  | 'recordEvent'
  | 'streamWaitEvent'
>;

interface Side {
  readonly stream: Handle;
  readonly forked: Handle;
  readonly joined: Handle;
}

export class ContextStreams {
  readonly main: Handle;
  private active: Handle;
  private side?: Side;

  /**
   * `together: false` (DRAMA3_SIDE_STREAM=off) runs alongside()'s parts one after the other on the main stream;
   * `priority` is both streams' (the driver's count: lower is served first, 0 the default).
   */
  constructor(
    private readonly driver: StreamDriver,
    private readonly together = process.env.DRAMA3_SIDE_STREAM !== 'off',
    private readonly priority = 0,
  ) {
    this.main = driver.createStream(priority);
    this.active = this.main;
  }

  /** Where launches go now: the main stream, or the side stream while an alongside() part is enqueued. */
  get current(): Handle {
    return this.active;
  }

  /**
   * `side` is enqueued on the side stream after everything queued so far, `main` on the main stream beside it, and
   * what is enqueued afterwards waits for both. The parts must not write what the other reads or writes.
   */
  alongside(side: () => void, main: () => void): void {
    if (this.active !== this.main) throw new Error('alongside() cannot nest: the side stream is in use');
    if (!this.together) {
      side();
      main();
      return;
    }
    const branch = this.side ?? this.createSide();
    this.driver.recordEvent(branch.forked, this.main);
    this.driver.streamWaitEvent(branch.stream, branch.forked);
    this.active = branch.stream;
    try {
      try {
        side();
      } finally {
        this.active = this.main;
        this.driver.recordEvent(branch.joined, branch.stream);
      }
      main();
    } finally {
      // Joined even when a part throws, so that a capture in progress can still end.
      this.driver.streamWaitEvent(this.main, branch.joined);
    }
  }

  /** Waits for the work queued on both streams. */
  synchronize(): void {
    this.driver.synchronizeStream(this.main);
    if (this.side !== undefined) this.driver.synchronizeStream(this.side.stream);
  }

  destroy(): void {
    this.synchronize();
    if (this.side !== undefined) {
      this.driver.destroyEvent(this.side.forked);
      this.driver.destroyEvent(this.side.joined);
      this.driver.destroyStream(this.side.stream);
      this.side = undefined;
    }
    this.driver.destroyStream(this.main);
  }

  private createSide(): Side {
    this.side = {
      stream: this.driver.createStream(this.priority),
      forked: this.driver.createEvent(false),
      joined: this.driver.createEvent(false),
    };
    return this.side;
  }
}
