// One part of the kernel contract, so that several processes on one GPU machine can share its host references:
// DRAMA3_CONTRACT_PART=i/n keeps the cases whose index in the chosen list is i modulo n. The n parts are disjoint and
// together hold every case, and neighbouring cases (often of one family, and alike in cost) fall in different parts.

export interface ContractPart {
  readonly index: number;
  readonly count: number;
}

export const WHOLE_CONTRACT: ContractPart = { index: 0, count: 1 };

/** Parses `i/n` (0 ≤ i < n); absent or empty is the whole contract. */
export function contractPart(text: string | undefined): ContractPart {
  if (text === undefined || text === '') return WHOLE_CONTRACT;
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (match === null || count < 1 || index >= count) {
    throw new Error(`DRAMA3_CONTRACT_PART must be i/n with 0 <= i < n (e.g. 0/4), got ${text}`);
  }
  return { index, count };
}

/** The items of `all` in this part, by their index in `all`. */
export function inPart<T>(all: readonly T[], part: ContractPart): T[] {
  return all.filter((_, position) => position % part.count === part.index);
}

/** How a SUMMARY line names the part ('' for the whole contract). */
export function partLabel(part: ContractPart): string {
  return part.count === 1 ? '' : `part ${part.index} of ${part.count}`;
}
