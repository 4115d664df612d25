// Device bytes of lane state on the cuda backend, counted the way it allocates them (src/model/lane-slabs.ts, the
// backbone's and tower's allocateSlabs, SlotSpeechModel.plan) with the cuda element sizes. Plan allocates every slab
// up front for its slots at full length: S = lanes + 1 slots (the last is the planning slot) of R = max(rowsPerLane,
// prefill chunk + 1) rows each, whatever the requests on them use. A prompt row and a frame cost the same: each is
// one K/V row of every backbone full-attention layer and every tower layer (text prompt rows run the tower too).
import { elementBytes } from '../backend/cuda/tensors.ts';
import { RAS_WINDOW } from '../backend/types.ts';
import type { CodecConfig } from '../codec/config.ts';
import { laneStateBytes } from '../codec/cuda/lane-state.ts';
import { callTableBytes } from '../model/call-tables.ts';
import type { Drama3Config } from '../model/config.ts';
import { tailInputWidth } from '../model/tower.ts';
import type { LaneCapacity } from '../model/types.ts';

export interface LaneBytes {
  /** Bytes a lane slot holds whatever its length: DeltaNet conv + recurrent state, RAS window, pending record. */
  readonly fixedPerLane: number;
  /** K/V bytes of one prompt row (backbone full-attention layers and every tower layer). */
  readonly perPromptRow: number;
  /** K/V bytes of one generated frame: the same row of the same slabs as a prompt row. */
  readonly perFrame: number;
  /** The CUDA codec's decode state of one stream (0 when the codec decodes on the cpu). */
  readonly codecPerStream: number;
}

/** What SlotSpeechModel.plan allocates beside scratch and activation buffers (which running it sizes). */
export interface PlanBytes {
  readonly slots: number;
  readonly rowsPerSlot: number;
  /** Every slab of every slot (fixed state and K/V rows). */
  readonly slabs: number;
  /** Call tables (the step tail's too), the prompt and step record buffers, the tail's input rows. */
  readonly tables: number;
  readonly total: number;
}

const BF16 = elementBytes('bf16');
const F32 = elementBytes('f32');
const I32 = elementBytes('i32');

/** Width of a frame record: the token and one code per codebook. */
export function recordWidth(config: Drama3Config): number {
  return 1 + config.audio.codebooks;
}

export function laneBytes(config: Drama3Config, codec?: CodecConfig): LaneBytes {
  const { text, tower } = config;
  const backboneRow = 2 * text.keyValueHeads * text.headDim * BF16;
  const towerRow = 2 * tower.keyValueHeads * tower.headDim * BF16;
  const perRow = text.fullAttentionLayers.length * backboneRow + tower.layers * towerRow;
  const conv = (text.linearConvKernel - 1) * text.linearConvChannels * BF16;
  const recurrent = text.linearValueHeads * text.linearKeyHeadDim * text.linearValueHeadDim * F32;
  const perSlot = text.linearAttentionLayers.length * (conv + recurrent) + (RAS_WINDOW + recordWidth(config)) * I32;
  return {
    fixedPerLane: perSlot,
    perPromptRow: perRow,
    perFrame: perRow,
    codecPerStream: codec === undefined ? 0 : laneStateBytes(codec),
  };
}

/** Bytes of a lane holding `rows` rows (prompt rows + frames + 1). */
export function laneStateBytesFor(bytes: LaneBytes, rows: number): number {
  return bytes.fixedPerLane + rows * bytes.perPromptRow;
}

/** The slabs, tables and records of a plan of `capacity` with prefill chunks of `prefillChunk` rows. */
export function planBytes(config: Drama3Config, capacity: LaneCapacity, prefillChunk: number): PlanBytes {
  const bytes = laneBytes(config);
  const { lanes } = capacity;
  const slots = lanes + 1;
  const rowsPerSlot = Math.max(capacity.rowsPerLane, prefillChunk + 1);
  const slabs = slots * laneStateBytesFor(bytes, rowsPerSlot);
  const width = recordWidth(config);
  // The call tables (speech-model.ts): the plan's, and the step tail's own of a row and a sequence a lane.
  const callTables = callTableBytes(Math.max(prefillChunk, lanes), lanes);
  const tailTables = callTableBytes(lanes, lanes);
  // A prefill call's records and its rows' successors (the tower's codes), a step's input and frames, its tail's
  // frames; the tail's input rows.
  const records = (2 * prefillChunk * width + 3 * lanes * width) * I32 + lanes * tailInputWidth(config) * BF16;
  const tables = callTables + tailTables + records;
  return { slots, rowsPerSlot, slabs, tables, total: slabs + tables };
}

/** Bytes one layer's routed experts hold as loaded (e4m3 bytes + f32 128×128 block scales, or bf16). */
export function expertLayerBytes(config: Drama3Config): number {
  const { text, quantization } = config;
  const matrices = 3 * text.experts;
  const elements = text.expertIntermediate * text.hiddenSize;
  if (quantization === undefined) return matrices * elements * BF16;
  const [blockRows, blockCols] = quantization.blockSize;
  const scales = Math.ceil(text.expertIntermediate / blockRows) * Math.ceil(text.hiddenSize / blockCols);
  const transposed = Math.ceil(text.hiddenSize / blockRows) * Math.ceil(text.expertIntermediate / blockCols);
  // gate and up are [I, H]; down is [H, I].
  return matrices * elements * elementBytes('e4m3') + text.experts * (2 * scales + transposed) * F32;
}
