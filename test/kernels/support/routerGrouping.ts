// The grouping a router launch ends with when given one (src/backend/cuda/ops/router.ts RouterGrouping), for the
// contract's router cases: its tables as outputs held exactly to the reference grouping (moeReference.ts, the tables
// moe_group_pairs writes), or as scratch inputs that a case does not compare (its invariance runs: the tables are not
// per row). The arrival counter is always an input, zero when uploaded: a correct launch leaves it at zero for the
// next repeat or graph replay, which find it as uploaded.
import { MOE_TILE_PAIRS, moeMaxTiles } from '../../../src/backend/cuda/ops/moe.ts';
import type { RouterGrouping } from '../../../src/backend/cuda/ops/router.ts';
import type { OutputSpec } from './contract.ts';
import { referenceGrouping } from './moeReference.ts';

export interface GroupedSizes {
  readonly rows: number;
  readonly experts: number;
  readonly topK: number;
}

function tableCounts({ rows, experts, topK }: GroupedSizes) {
  return {
    pairSlots: rows * topK,
    expertOffsets: experts + 1,
    tiles: moeMaxTiles(rows * topK, experts) * 4,
    tileCount: 1,
  };
}

/** The tables as exactly compared outputs. */
export function routerGroupingOutputs(sizes: GroupedSizes): OutputSpec[] {
  return Object.entries(tableCounts(sizes)).map(([name, count]) => ({ name, kind: 'i32', count }));
}

/** The arrival counter, and with `tables` the tables too, as inputs (written by the launch, never compared). */
export function routerGroupingInputs(sizes: GroupedSizes, tables: boolean): Record<string, Int32Array> {
  const inputs: Record<string, Int32Array> = { arrivals: new Int32Array(1) };
  if (tables) for (const [name, count] of Object.entries(tableCounts(sizes))) inputs[name] = new Int32Array(count);
  return inputs;
}

export function routerGroupingPointers(p: Readonly<Record<string, bigint>>): RouterGrouping {
  const { pairSlots, expertOffsets, tiles, tileCount, arrivals } = p;
  return {
    pairSlots: pairSlots!,
    expertOffsets: expertOffsets!,
    tiles: tiles!,
    tileCount: tileCount!,
    arrivals: arrivals!,
  };
}

/** The tables the grouping must write for the reference router's ids. */
export function routerGroupingReference(ids: Int32Array, experts: number) {
  return referenceGrouping(ids, experts, MOE_TILE_PAIRS, moeMaxTiles(ids.length, experts));
}
