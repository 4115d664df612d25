// The call tables of a prefill chunk or a frame step (docs/exactness.md): host mirrors written here, then queued to
// the backend's i32 buffers before the call, outside the step's arithmetic (queued: calls already enqueued read the
// values they were enqueued with, so a step's tables may be written while the step before it runs).
//   row table [T, 2] (slot, position); sequence table [Q, 4] (slot, firstRow, rowCount, startPosition);
//   lane table [B, 9] (slot, position, frame, seed low, seed high, temperature f32 bits, top-p f32 bits, top-k, greedy)
import {
  type Backend,
  type CallTables,
  LANE_ENTRY,
  LANE_FRAME,
  LANE_GREEDY,
  LANE_POSITION,
  LANE_SEED_HIGH,
  LANE_SEED_LOW,
  LANE_SLOT,
  LANE_TEMPERATURE,
  LANE_TOP_K,
  LANE_TOP_P,
  ROW_ENTRY,
  SEQUENCE_ENTRY,
  type Tensor,
} from '../backend/types.ts';
import { float32Bits } from '../numeric/dtypes.ts';
import type { SamplingSettings } from './types.ts';

/** One lane of a step: its slot, the position of the row it runs, the index of the frame it draws, its settings. */
export interface StepLane {
  readonly slot: number;
  readonly stepPosition: number;
  readonly stepFrame: number;
  readonly sampling: SamplingSettings;
}

/** One lane's rows in a prefill call: `count` rows of `slot` from position `start`. */
export interface PrefillSequence {
  readonly slot: number;
  readonly start: number;
  readonly count: number;
}

/** The bytes a CallTableSet of `maxRows` rows and `maxLanes` lanes allocates (its three int32 tables). */
export function callTableBytes(maxRows: number, maxLanes: number): number {
  return (maxRows * ROW_ENTRY + Math.max(maxRows, maxLanes) * SEQUENCE_ENTRY + maxLanes * LANE_ENTRY) * 4;
}

export class CallTableSet<B> {
  readonly rowTable: Tensor<B>;
  readonly sequenceTable: Tensor<B>;
  readonly laneTable: Tensor<B>;
  private readonly rows: Int32Array;
  private readonly sequences: Int32Array;
  private readonly lanes: Int32Array;
  /** The tables as ops read them (sequenceCount changes per call; the object is reused). */
  readonly tables: { rows: B; sequences: B; sequenceCount: number };

  constructor(
    private readonly backend: Backend<B>,
    maxRows: number,
    maxLanes: number,
  ) {
    this.rowTable = backend.allocate('i32', [maxRows, ROW_ENTRY]);
    this.sequenceTable = backend.allocate('i32', [Math.max(maxRows, maxLanes), SEQUENCE_ENTRY]);
    this.laneTable = backend.allocate('i32', [maxLanes, LANE_ENTRY]);
    this.rows = new Int32Array(maxRows * ROW_ENTRY);
    this.sequences = new Int32Array(Math.max(maxRows, maxLanes) * SEQUENCE_ENTRY);
    this.lanes = new Int32Array(maxLanes * LANE_ENTRY);
    this.tables = { rows: this.rowTable.data, sequences: this.sequenceTable.data, sequenceCount: 0 };
  }

  /** Sequences of `count` rows of `slot` from position `start`, their rows one after another (a prefill call). */
  prefill(sequences: readonly PrefillSequence[]): CallTables<B> {
    let row = 0;
    sequences.forEach(({ slot, start, count }, index) => {
      this.sequences.set([slot, row, count, start], index * SEQUENCE_ENTRY);
      for (let t = 0; t < count; t++, row++) {
        this.rows[row * ROW_ENTRY] = slot;
        this.rows[row * ROW_ENTRY + 1] = start + t;
      }
    });
    this.write(row, sequences.length);
    return this.tables;
  }

  /** One row per lane: lane b is sequence b, row b, at its step position. */
  step(lanes: readonly StepLane[]): CallTables<B> {
    lanes.forEach((lane, b) => {
      const { seed, temperature, topP, topK, greedy } = lane.sampling;
      const entry = b * LANE_ENTRY;
      this.lanes[entry + LANE_SLOT] = lane.slot;
      this.lanes[entry + LANE_POSITION] = lane.stepPosition;
      this.lanes[entry + LANE_FRAME] = lane.stepFrame;
      this.lanes[entry + LANE_SEED_LOW] = seed >>> 0;
      this.lanes[entry + LANE_SEED_HIGH] = Math.floor(seed / 2 ** 32) >>> 0;
      this.lanes[entry + LANE_TEMPERATURE] = float32Bits(temperature);
      this.lanes[entry + LANE_TOP_P] = float32Bits(topP);
      this.lanes[entry + LANE_TOP_K] = topK;
      this.lanes[entry + LANE_GREEDY] = greedy ? 1 : 0;
      this.rows[b * ROW_ENTRY] = lane.slot;
      this.rows[b * ROW_ENTRY + 1] = lane.stepPosition;
      const sequence = b * SEQUENCE_ENTRY;
      this.sequences[sequence] = lane.slot;
      this.sequences[sequence + 1] = b;
      this.sequences[sequence + 2] = 1;
      this.sequences[sequence + 3] = lane.stepPosition;
    });
    this.backend.queueIntegers(this.laneTable, 0, this.lanes.subarray(0, lanes.length * LANE_ENTRY));
    this.write(lanes.length, lanes.length);
    return this.tables;
  }

  /** `target` given this set's step tables of `lanes` lanes, copied on the backend (not written again). */
  copyStep(target: CallTableSet<B>, lanes: number): CallTables<B> {
    const { backend } = this;
    backend.copy(this.rowTable.data, target.rowTable.data, lanes * ROW_ENTRY);
    backend.copy(this.sequenceTable.data, target.sequenceTable.data, lanes * SEQUENCE_ENTRY);
    backend.copy(this.laneTable.data, target.laneTable.data, lanes * LANE_ENTRY);
    target.tables.sequenceCount = lanes;
    return target.tables;
  }

  private write(rows: number, sequences: number): void {
    this.backend.queueIntegers(this.rowTable, 0, this.rows.subarray(0, rows * ROW_ENTRY));
    this.backend.queueIntegers(this.sequenceTable, 0, this.sequences.subarray(0, sequences * SEQUENCE_ENTRY));
    this.tables.sequenceCount = sequences;
  }
}
