// A text front end with no tokenizer, for scheduler and server tests: one prompt row per code point (the row's token
// is the code point), a fixed 8-row header, and the same structural-token refusal as the real prompt builder. It
// does not normalise text.
import { CODES_PER_FRAME } from '../shared/frame.ts';
import { refuseNullStructuralTokens } from '../text/null-structural.ts';
import type { BuiltPrompt, PromptRequest, TextFrontEnd } from './runtime.ts';

const HEADER_ROWS = 8;

export class NullTextFrontEnd implements TextFrontEnd {
  split(text: string, budget: number): string[] {
    const pieces: string[] = [];
    let current: string[] = [];
    for (const word of text.split(/(?<=\s)/u)) {
      const points = [...word];
      if (current.length + points.length > budget && current.length > 0) {
        pieces.push(current.join(''));
        current = [];
      }
      for (let start = 0; start < points.length; start += budget) {
        const part = points.slice(start, start + budget);
        if (current.length + part.length > budget) {
          pieces.push(current.join(''));
          current = [];
        }
        current.push(...part);
      }
    }
    if (current.length > 0) pieces.push(current.join(''));
    return pieces;
  }

  prompt({ text, instructions, references }: PromptRequest): BuiltPrompt {
    for (const [param, value] of [
      ['input', text],
      ['instructions', instructions ?? ''],
    ] as const)
      refuseNullStructuralTokens(value, param);
    const referenceRows = references.reduce(
      (sum, reference) => sum + [...reference.text].length + reference.frames.length,
      0,
    );
    const textPoints = [...(instructions ?? ''), ...text].map((point) => point.codePointAt(0)!);
    const total = HEADER_ROWS + referenceRows + textPoints.length;
    const tokens = new Int32Array(total);
    const codes = new Int32Array(total * CODES_PER_FRAME).fill(-1);
    let row = HEADER_ROWS;
    for (const reference of references) {
      for (const point of reference.text) tokens[row++] = point.codePointAt(0)!;
      for (const frame of reference.frames) {
        tokens[row] = 200000 + frame[0]!;
        codes.set(frame, row * CODES_PER_FRAME);
        row += 1;
      }
    }
    for (const point of textPoints) tokens[row++] = point;
    return { rows: { tokens, codes, referenceRows: HEADER_ROWS + referenceRows }, textTokens: [...text].length };
  }
}
