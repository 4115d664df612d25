// The streams a context launches on: its own, a side stream for independent work enqueued alongside it, and tail
// streams for a frame step's tail (the tower layers the next step does not read), which runs beside the work queued
// after it until that work joins it: one at the context's priority, one a priority below it for tails that should
// yield to the next step's head. In a captured graph an `alongside` is a fork and a join (event record, stream
// wait), so its two parts run together on the device; a tail is its own recording, launched on the tail stream after
// an event. Each part's launches and their order stay what they would be alone, so no output bit can change.
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

/** A tail stream: `started` on the main stream before each tail, `finished` after it. */
interface Tail {
  readonly stream: Handle;
  readonly started: Handle;
  readonly finished: Handle;
}

export class ContextStreams {
  readonly main: Handle;
  private active: Handle;
  private side?: Side;
  /** The tail stream at the context's priority, and the one a priority below it (where the driver has one). */
  private levelTail?: Tail;
  private belowTail?: Tail;
  /** Where the last tail ran, and whether the main stream has yet to wait for it. */
  private lastTail?: Tail;
  private tailUnjoined = false;

  /**
   * `together: false` (DRAMA3_SIDE_STREAM=off) runs alongside()'s parts one after the other on the main stream;
   * `priority` is the main and side streams' (the driver's count: lower is served first, 0 the default), and
   * `belowPriority` that of the stream for tails asked to run below the step (the same stream where it equals
   * `priority`); `tailsBeside: false` (DRAMA3_TAIL_STREAM=off) runs each tail on the main stream where it is queued.
   */
  constructor(
    private readonly driver: StreamDriver,
    private readonly together = process.env.DRAMA3_SIDE_STREAM !== 'off',
    private readonly priority = 0,
    readonly tailsBeside = process.env.DRAMA3_TAIL_STREAM !== 'off',
    private readonly belowPriority = priority,
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
    if (this.active !== this.main) throw new Error('alongside() runs from the main stream only');
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

  /**
   * `work` is enqueued on a tail stream after everything queued so far (on the main stream, and every tail before
   * it); what the main stream queues afterwards runs beside it, until joinTail(). `below`: on the stream a priority
   * below the main one, so that the blocks of what runs beside it are served first. `work` must not write what that
   * later work reads or writes, nor read what it writes.
   */
  tail(work: () => void, below = false): void {
    if (this.active !== this.main) throw new Error('tail() runs from the main stream only');
    if (!this.tailsBeside) {
      work();
      return;
    }
    const tail = below && this.belowPriority !== this.priority ? this.below() : this.level();
    this.driver.recordEvent(tail.started, this.main);
    this.driver.streamWaitEvent(tail.stream, tail.started);
    // Tails share their buffers: one on the other stream also waits for the tail before it.
    const previous = this.lastTail;
    if (this.tailUnjoined && previous !== undefined && previous !== tail) {
      this.driver.streamWaitEvent(tail.stream, previous.finished);
    }
    this.active = tail.stream;
    try {
      work();
    } finally {
      this.active = this.main;
      this.driver.recordEvent(tail.finished, tail.stream);
      this.lastTail = tail;
      this.tailUnjoined = true;
    }
  }

  /** What the main stream queues from now on waits for every tail queued so far (each waits for the one before). */
  joinTail(): void {
    const tail = this.lastTail;
    if (tail === undefined || !this.tailUnjoined) return;
    this.driver.streamWaitEvent(this.main, tail.finished);
    this.tailUnjoined = false;
  }

  /** Waits for the work queued on every stream. */
  synchronize(): void {
    this.driver.synchronizeStream(this.main);
    if (this.side !== undefined) this.driver.synchronizeStream(this.side.stream);
    for (const tail of [this.levelTail, this.belowTail]) {
      if (tail !== undefined) this.driver.synchronizeStream(tail.stream);
    }
  }

  destroy(): void {
    this.synchronize();
    if (this.side !== undefined) {
      this.driver.destroyEvent(this.side.forked);
      this.driver.destroyEvent(this.side.joined);
      this.driver.destroyStream(this.side.stream);
      this.side = undefined;
    }
    for (const tail of [this.levelTail, this.belowTail]) {
      if (tail === undefined) continue;
      this.driver.destroyEvent(tail.started);
      this.driver.destroyEvent(tail.finished);
      this.driver.destroyStream(tail.stream);
    }
    this.levelTail = undefined;
    this.belowTail = undefined;
    this.lastTail = undefined;
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

  private level(): Tail {
    this.levelTail ??= this.createTail(this.priority);
    return this.levelTail;
  }

  private below(): Tail {
    this.belowTail ??= this.createTail(this.belowPriority);
    return this.belowTail;
  }

  private createTail(priority: number): Tail {
    return {
      stream: this.driver.createStream(priority),
      started: this.driver.createEvent(false),
      finished: this.driver.createEvent(false),
    };
  }
}
