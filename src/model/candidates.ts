// The backbone's candidate ids: the 4096 contiguous semantic ids then <|im_end|> (MODEL.md §1). config.json's
// special_token_ids give them when present; otherwise the checkpoint's tokenizer.json added tokens do.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DramaError } from '../errors.ts';
import { IM_END, semanticToken } from '../text/vocabulary.ts';
import type { Drama3Config } from './config.ts';

export interface CandidateIds {
  readonly semanticBegin: number;
  readonly imEnd: number;
  /** [semantic ids…, imEnd] */
  readonly ids: Int32Array;
}

async function idsFromTokenizer(checkpointDir: string): Promise<{ semanticBegin: number; imEnd: number }> {
  const path = join(checkpointDir, 'tokenizer.json');
  let added: { id: number; content: string }[];
  try {
    added =
      (JSON.parse(await readFile(path, 'utf8')) as { added_tokens?: { id: number; content: string }[] }).added_tokens ??
      [];
  } catch (error) {
    throw new DramaError(
      'TOKENIZER_UNREADABLE',
      `cannot read the special token ids from ${path}: ${(error as Error).message}`,
      {
        kind: 'bad_checkpoint',
        cause: error,
      },
    );
  }
  const idOf = (content: string) => {
    const token = added.find((entry) => entry.content === content);
    if (token === undefined) {
      throw new DramaError('TOKENIZER_TOKEN_MISSING', `${path} has no added token ${content}`, {
        kind: 'bad_checkpoint',
      });
    }
    return token.id;
  };
  return { semanticBegin: idOf(semanticToken(0)), imEnd: idOf(IM_END) };
}

export async function candidateIds(checkpointDir: string, config: Drama3Config): Promise<CandidateIds> {
  const special = config.specialTokens;
  const { semanticBegin, imEnd } =
    special.semanticBegin !== undefined && special.imEnd !== undefined
      ? { semanticBegin: special.semanticBegin, imEnd: special.imEnd }
      : await idsFromTokenizer(checkpointDir);
  const count = config.audio.semanticCodebookSize;
  if (semanticBegin + count > config.text.vocabSize || imEnd >= config.text.vocabSize) {
    throw new DramaError(
      'CANDIDATES_OUT_OF_VOCAB',
      `semantic ids ${semanticBegin}..${semanticBegin + count - 1} or <|im_end|> ${imEnd} lie outside vocab_size ${config.text.vocabSize}`,
      { kind: 'bad_checkpoint' },
    );
  }
  const ids = new Int32Array(count + 1);
  for (let code = 0; code < count; code++) ids[code] = semanticBegin + code;
  ids[count] = imEnd;
  return { semanticBegin, imEnd, ids };
}
