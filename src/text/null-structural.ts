// The structural tokens of the null text front end (scheduler and server tests), refused in user text as the real
// prompt builder refuses its own; the voice encoder checks null-runtime transcripts with it too.
import { DramaError } from '../errors.ts';

const STRUCTURAL_TOKENS = ['<|im_start|>', '<|im_end|>', '<|voice|>', '<|text|>', '<|interleave|>', '<|semantic:'];

/** Refuses text holding one of the null front end's structural tokens. */
export function refuseNullStructuralTokens(value: string, param: string): void {
  const token = STRUCTURAL_TOKENS.find((candidate) => value.includes(candidate));
  if (token !== undefined) {
    throw new DramaError('TEXT_STRUCTURAL_TOKEN', `${param} contains the structural token ${token}`, { param });
  }
}
