// The FP8 experts' device layout, made once at load from the release's per-expert tensors (MODEL.md §2):
//   gate|up:  one buffer [experts, 2I/16 row groups, H/128 blocks, 2048 bytes]; row group r holds gate rows 8r..8r+7
//             (mma rows 0–7) and up rows 8r..8r+7 (mma rows 8–15), so one thread holds gate and up of the same column
//   down:     one buffer [experts, H/16 row groups, I/128 blocks, 2048 bytes]; row group r holds rows 16r..16r+15
//   scales:   gate|up [experts, 2I/128, H/128] fp32 (the gate's weight_scale_inv rows, then the up's); down
//             [experts, H/128, I/128] fp32, as shipped
// A 2048-byte block is 16 rows × 128 columns in mma.sync m16n8k16 fragment order: lane L's 64 bytes are chunks
// c = 0..3 at byte (c·32 + L)·16, word v = 4c + (0..3) of them is k-step s = v >> 1 of row g + 8·(v & 1)
// (g = L >> 2), and byte j of that word is column 32·(L & 3) + 4s + j of the block. The activations are read in
// the same column order (kernels/cuda/moe_fp8.cu), so every block's sum covers exactly its 128 columns.
import { DramaError } from '../../errors.ts';

export const FP8_BLOCK = 128;
const ROWS_PER_GROUP = 16;
const BLOCK_BYTES = ROWS_PER_GROUP * FP8_BLOCK;

function requireShape(condition: boolean, message: string): void {
  if (!condition) throw new DramaError('KERNEL_ARGUMENT_INVALID', message, { kind: 'internal' });
}

/** Writes row groups of `source` ([rows, columns] bytes) in fragment order; `sourceRow(group, m)` picks mma row m. */
function packGroups(
  source: Uint8Array,
  columns: number,
  groups: number,
  sourceRow: (group: number, m: number) => number,
  target: Uint8Array,
  targetOffset: number,
): void {
  const blocks = columns / FP8_BLOCK;
  for (let group = 0; group < groups; group++) {
    for (let block = 0; block < blocks; block++) {
      const base = targetOffset + (group * blocks + block) * BLOCK_BYTES;
      for (let lane = 0; lane < 32; lane++) {
        const g = lane >> 2;
        const columnBase = block * FP8_BLOCK + 32 * (lane & 3);
        for (let word = 0; word < 16; word++) {
          const chunk = word >> 2;
          const step = word >> 1;
          const row = sourceRow(group, g + 8 * (word & 1));
          const from = row * columns + columnBase + 4 * step;
          const to = base + (chunk * 32 + lane) * 16 + 4 * (word & 3);
          for (let j = 0; j < 4; j++) target[to + j] = source[from + j]!;
        }
      }
    }
  }
}

/** Packs one expert's gate and up weights (each [I, H] e4m3 bytes) into `target` at expert `expert`'s place. */
export function packGateUpFp8(
  gate: Uint8Array,
  up: Uint8Array,
  hidden: number,
  intermediate: number,
  target: Uint8Array,
  expert: number,
): void {
  requireShape(hidden % FP8_BLOCK === 0 && intermediate % 8 === 0, `gate/up shape [${intermediate}, ${hidden}]`);
  requireShape(gate.length === intermediate * hidden && up.length === gate.length, 'gate/up byte counts');
  const stacked = new Uint8Array(2 * intermediate * hidden);
  stacked.set(gate, 0);
  stacked.set(up, gate.length);
  const groups = (2 * intermediate) / ROWS_PER_GROUP;
  packGroups(
    stacked,
    hidden,
    groups,
    (group, m) => (m < 8 ? 8 * group + m : intermediate + 8 * group + m - 8),
    target,
    expert * stacked.length,
  );
}

/** Packs one expert's down weights ([H, I] e4m3 bytes) into `target` at expert `expert`'s place. */
export function packDownFp8(
  down: Uint8Array,
  hidden: number,
  intermediate: number,
  target: Uint8Array,
  expert: number,
): void {
  requireShape(
    intermediate % FP8_BLOCK === 0 && hidden % ROWS_PER_GROUP === 0,
    `down shape [${hidden}, ${intermediate}]`,
  );
  requireShape(down.length === hidden * intermediate, 'down byte count');
  packGroups(
    down,
    intermediate,
    hidden / ROWS_PER_GROUP,
    (group, m) => ROWS_PER_GROUP * group + m,
    target,
    expert * down.length,
  );
}

/** Places one expert's gate and up scales (each [I/128, H/128]) at expert `expert`'s place of the gate|up scales. */
export function packGateUpScales(gate: Float32Array, up: Float32Array, target: Float32Array, expert: number): void {
  requireShape(gate.length === up.length, 'gate/up scale counts');
  target.set(gate, expert * 2 * gate.length);
  target.set(up, expert * 2 * gate.length + gate.length);
}

// bf16 experts: the same row groups in 2048-byte blocks of 16 rows × 64 columns; chunk c of lane L is k-step c, its
// word v is row g + 8·(v & 1), columns 16·(L & 3) + 4c + 2·(v >> 1) + (0, 1) (kernels/cuda/moe_bf16.cu).
export const BF16_BLOCK = 64;

function packGroupsBf16(
  source: Uint16Array,
  columns: number,
  groups: number,
  sourceRow: (group: number, m: number) => number,
  target: Uint16Array,
  targetOffset: number,
): void {
  const blocks = columns / BF16_BLOCK;
  for (let group = 0; group < groups; group++) {
    for (let block = 0; block < blocks; block++) {
      const base = targetOffset + (group * blocks + block) * (BLOCK_BYTES / 2);
      for (let lane = 0; lane < 32; lane++) {
        const g = lane >> 2;
        for (let chunk = 0; chunk < 4; chunk++) {
          for (let word = 0; word < 4; word++) {
            const row = sourceRow(group, g + 8 * (word & 1));
            const from = row * columns + block * BF16_BLOCK + 16 * (lane & 3) + 4 * chunk + 2 * (word >> 1);
            const to = base + (chunk * 32 + lane) * 8 + 2 * word;
            target[to] = source[from]!;
            target[to + 1] = source[from + 1]!;
          }
        }
      }
    }
  }
}

/** Packs one bf16 expert's gate and up weights (each [I, H] bf16 bits) at expert `expert`'s place. */
export function packGateUpBf16(
  gate: Uint16Array,
  up: Uint16Array,
  hidden: number,
  intermediate: number,
  target: Uint16Array,
  expert: number,
): void {
  requireShape(hidden % BF16_BLOCK === 0 && intermediate % 8 === 0, `gate/up shape [${intermediate}, ${hidden}]`);
  requireShape(gate.length === intermediate * hidden && up.length === gate.length, 'gate/up element counts');
  const stacked = new Uint16Array(2 * intermediate * hidden);
  stacked.set(gate, 0);
  stacked.set(up, gate.length);
  const groups = (2 * intermediate) / ROWS_PER_GROUP;
  const row = (group: number, m: number) => (m < 8 ? 8 * group + m : intermediate + 8 * group + m - 8);
  packGroupsBf16(stacked, hidden, groups, row, target, expert * stacked.length);
}

/** Packs one bf16 expert's down weights ([H, I] bf16 bits) at expert `expert`'s place. */
export function packDownBf16(
  down: Uint16Array,
  hidden: number,
  intermediate: number,
  target: Uint16Array,
  expert: number,
): void {
  requireShape(
    intermediate % BF16_BLOCK === 0 && hidden % ROWS_PER_GROUP === 0,
    `down shape [${hidden}, ${intermediate}]`,
  );
  requireShape(down.length === hidden * intermediate, 'down element count');
  const row = (group: number, m: number) => ROWS_PER_GROUP * group + m;
  packGroupsBf16(down, intermediate, hidden / ROWS_PER_GROUP, row, target, expert * down.length);
}
