// The lane budget admission and the scheduler work from. On the cpu (and the null runtime of tests) lane state is
// host memory and the budget stays in rows, as set by --memory-rows. On cuda it is device bytes: every lane slot is
// planned up front (lane-bytes.ts), so the rows a lane may hold are what fits under the allocation cap once the
// weights are loaded and the rest of the plan, the reference cache and the codec's lanes, weights and scratch are set
// aside. A request
// costs its lane's fixed state plus (P + F + 1) rows; the scheduler reserves that against the lanes' total.
import { attentionWorkspaceBytes } from '../backend/cuda/ops/attention.ts';
import { DramaError } from '../errors.ts';
import type { Drama3Config } from '../model/config.ts';
import { expertLayerBytes, type LaneBytes, laneBytes, laneStateBytesFor, planBytes } from './lane-bytes.ts';

/** Lane memory per lane when counted in rows and none is set. */
export const DEFAULT_MEMORY_ROWS_PER_LANE = 65536;
/** Device bytes set aside for the activation buffers and scratch that plan sizes by running a chunk and a step. */
export const ACTIVATION_RESERVE_BYTES = 512 * 1024 ** 2;

/** The allocator's ledger of one device: its cap and the bytes handed out (or reserved) now. */
export interface DeviceMemory {
  readonly limitBytes: number;
  readonly usedBytes: number;
}

/** Where the speech model keeps its lane state on a device (absent from a runtime: host memory, counted in rows). */
export interface RuntimeMemory {
  readonly config: Drama3Config;
  /** The model's prefill chunk (plan gives every slot at least its rows and the lookahead row). */
  readonly prefillChunk: number;
  /** Streams the CUDA codec holds decode state for on the same device (0: the codec decodes on the cpu). */
  readonly codecStreams: number;
  /** Device bytes the CUDA codec's own contexts hold beside that state (weights, scratch; 0 or absent: none). */
  readonly codecDeviceBytes?: number;
  device(): DeviceMemory;
}

export interface LaneBudget {
  readonly unit: 'device-bytes' | 'rows';
  readonly lanes: number;
  /** Most rows (prompt rows + frames + 1) one request may hold: every slot is planned this long. */
  readonly rowsPerLane: number;
  /** Rows all running requests may hold together. */
  readonly poolRows: number;
  /** A request's cost in the budget's unit is fixedPerLane + rows × perRow (rows: 0 and 1). */
  readonly fixedPerLane: number;
  readonly perRow: number;
  /** Device bytes of a lane's state, fixed and per row (device-bytes only). */
  readonly bytes?: LaneBytes;
  /** The device ledger before plan and what was set aside from it (device-bytes only). */
  readonly device?: { readonly limitBytes: number; readonly usedBytes: number; readonly reservedBytes: number };
}

/** A request's cost in the budget's unit: its lane's fixed state and `rows` rows. */
export function requestCost(budget: LaneBudget, rows: number): number {
  return budget.fixedPerLane + rows * budget.perRow;
}

/** What all running requests may reserve together, in the budget's unit. */
export function poolCost(budget: LaneBudget): number {
  return budget.lanes * budget.fixedPerLane + budget.poolRows * budget.perRow;
}

/** Rows as --memory-rows sets them (default lanes × DEFAULT_MEMORY_ROWS_PER_LANE); a slot holds up to the context. */
export function rowBudget(lanes: number, contextRows: number, memoryRows: number | undefined): LaneBudget {
  const poolRows = memoryRows ?? lanes * DEFAULT_MEMORY_ROWS_PER_LANE;
  return { unit: 'rows', lanes, rowsPerLane: Math.min(contextRows, poolRows), poolRows, fixedPerLane: 0, perRow: 1 };
}

export interface DeviceBudgetRequest {
  readonly lanes: number;
  readonly contextRows: number;
  /** An explicit row budget further limits the rows a lane and all lanes may hold. */
  readonly memoryRows: number | undefined;
  /** The reference cache's snapshots live on the device too. */
  readonly referenceCacheBytes: number;
  readonly memory: RuntimeMemory;
}

/** Device bytes set aside from the cap before the slabs: what plan allocates beside them and what shares the device. */
function deviceReserve(request: DeviceBudgetRequest): number {
  const { config, codecStreams, prefillChunk } = request.memory;
  const { lanes, contextRows } = request;
  const tables = planBytes(config, { lanes, rowsPerLane: 2 }, prefillChunk).tables;
  // The attention workspace of a step (lanes rows) or a prefill chunk grows with a slot's capacity (at most the
  // context) and, as scratch, up to twice its need.
  const workspace = Math.max(
    ...[config.text, config.tower].flatMap((part) =>
      [lanes, prefillChunk].map((rows) =>
        attentionWorkspaceBytes(rows, {
          queryHeads: part.attentionHeads,
          kvHeads: part.keyValueHeads,
          headDim: part.headDim,
          slots: lanes + 1,
          capacity: contextRows,
        }),
      ),
    ),
  );
  // Plan packs the routed experts for the kernels one layer at a time: one layer's copy is held twice meanwhile.
  const packing = expertLayerBytes(config);
  const codec = codecStreams * laneBytes(config, config.codec).codecPerStream + (request.memory.codecDeviceBytes ?? 0);
  return tables + 2 * workspace + packing + ACTIVATION_RESERVE_BYTES + request.referenceCacheBytes + codec;
}

/** The rows a lane may hold on the device: the most every slot (the planning slot too) can hold under the cap. */
export function deviceBudget(request: DeviceBudgetRequest): LaneBudget {
  const { lanes, contextRows, memoryRows, memory } = request;
  const { prefillChunk } = memory;
  const bytes = laneBytes(memory.config);
  const device = memory.device();
  const reservedBytes = deviceReserve(request);
  const slots = lanes + 1;
  const available = device.limitBytes - device.usedBytes - reservedBytes - slots * bytes.fixedPerLane;
  const rowsPerSlot = Math.floor(available / (slots * bytes.perPromptRow));
  // Plan gives every slot at least a prefill chunk and its lookahead row.
  const leastRows = prefillChunk + 1;
  if (rowsPerSlot < leastRows) {
    const needed = device.usedBytes + reservedBytes + slots * laneStateBytesFor(bytes, leastRows);
    throw new DramaError(
      'LANE_MEMORY_INSUFFICIENT',
      `${lanes} lanes need ${needed} device bytes with ${leastRows} rows each (${bytes.perPromptRow} bytes a row, ` +
        `${bytes.fixedPerLane} a lane, ${slots} slots with the planning slot; ${device.usedBytes} already in use and ` +
        `${reservedBytes} set aside), over the allocation limit of ${device.limitBytes}: use fewer lanes`,
      { kind: 'device', param: 'lanes' },
    );
  }
  const rowsPerLane = Math.min(contextRows, memoryRows ?? contextRows, rowsPerSlot);
  const poolRows = Math.min(memoryRows ?? lanes * rowsPerLane, lanes * rowsPerLane);
  return {
    unit: 'device-bytes',
    lanes,
    rowsPerLane,
    poolRows,
    fixedPerLane: bytes.fixedPerLane,
    perRow: bytes.perPromptRow,
    bytes,
    device: { limitBytes: device.limitBytes, usedBytes: device.usedBytes, reservedBytes },
  };
}
