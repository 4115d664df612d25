// How a prefill of several lanes is cut into backbone calls: each call runs at most `chunk` rows, the lanes in the
// order given, and a lane whose rows do not fit in what is left of a call goes on in the next one. Cutting a lane's
// prompt anywhere leaves it the same state (docs/exactness.md), so the packing changes no bit, only the call count.
import { DramaError } from '../errors.ts';
import type { PromptRows } from './types.ts';

/** One lane's rows in one call: [from, to), of which the backbone and tower run [from, from + count). */
export interface PrefillSegment<L> {
  readonly lane: L;
  readonly rows: PromptRows;
  readonly from: number;
  readonly to: number;
  /** The last prompt row is never run in prefill: it becomes the first step's pending row. */
  readonly count: number;
}

interface Part<L> {
  readonly lane: L;
  readonly rows: PromptRows;
  readonly from: number;
  readonly to: number;
}

/** Refuses a joint prefill that names one lane twice (its rows would be two sequences of one slot in a call). */
export function refuseRepeatedLanes(parts: readonly { readonly lane: unknown }[]): void {
  if (new Set(parts.map((part) => part.lane)).size === parts.length) return;
  throw new DramaError('PREFILL_LANE_REPEATED', 'a prefill of several lanes names one lane twice', {
    kind: 'internal',
  });
}

/** The calls of a prefill of `parts` (each lane once), at most `chunk` rows each, every part's rows in order. */
export function prefillCalls<L>(parts: readonly Part<L>[], chunk: number): PrefillSegment<L>[][] {
  const calls: PrefillSegment<L>[][] = [];
  let call: PrefillSegment<L>[] = [];
  let space = chunk;
  for (const part of parts) {
    if (part.to === part.from) continue;
    const runEnd = Math.max(part.from, Math.min(part.to, part.rows.tokens.length - 1));
    let from = part.from;
    while (from < part.to) {
      if (space === 0 && from < runEnd) {
        calls.push(call);
        call = [];
        space = chunk;
      }
      const count = Math.min(runEnd - from, space);
      // The segment that reaches the end of what runs also takes the part's end (the pending row, if any).
      const to = from + count === runEnd ? part.to : from + count;
      call.push({ lane: part.lane, rows: part.rows, from, to, count });
      space -= count;
      from = to;
    }
  }
  if (call.length > 0) calls.push(call);
  return calls;
}
