// Backbone input rows from prompt rows (MODEL.md §1): a text row is E_text[token]; a code row (and every generated
// frame) is (E_text[main] + E_cb[code[c]]) / sqrt(2), c = audio_config.frame_embedding_codebook, with E_cb the stacked
// codebook embedding table. out: [T, D].
import type { Backend } from '../backend/types.ts';
import { type AudioConfig, codebookEmbeddingRow } from './config.ts';
import type { PromptRows } from './types.ts';

export interface InputEmbeddings<B> {
  readonly backend: Backend<B>;
  readonly audio: AudioConfig;
  readonly hiddenSize: number;
  /** [V, D] */
  readonly tokenEmbeddings: B;
  /** [semantic + residual rows, D] */
  readonly codeEmbeddings: B;
}

/** Writes row `row` of `out` as the frame row of (main, the frame's codes [K]). */
export function writeFrameRow<B>(
  embeddings: InputEmbeddings<B>,
  main: number,
  codes: ArrayLike<number>,
  out: B,
  row: number,
): void {
  const { audio } = embeddings;
  const codebook = audio.frameEmbeddingCodebook;
  const codeRow = codebookEmbeddingRow(audio, codebook, codes[codebook]!);
  embeddings.backend.frameRow(
    embeddings.tokenEmbeddings,
    embeddings.codeEmbeddings,
    main,
    codeRow,
    out,
    row,
    embeddings.hiddenSize,
  );
}

/** Writes prompt rows [from, to) into out rows 0..to−from. */
export function writePromptRows<B>(
  embeddings: InputEmbeddings<B>,
  rows: PromptRows,
  from: number,
  to: number,
  out: B,
): void {
  const { backend, hiddenSize } = embeddings;
  const codebooks = embeddings.audio.codebooks;
  const single = new Int32Array(1);
  for (let r = from; r < to; r++) {
    const codes = rows.codes.subarray(r * codebooks, (r + 1) * codebooks);
    if (codes[0]! < 0) {
      single[0] = rows.tokens[r]!;
      backend.embed(
        embeddings.tokenEmbeddings,
        single,
        backend.view(out, (r - from) * hiddenSize, hiddenSize),
        1,
        hiddenSize,
      );
    } else {
      writeFrameRow(embeddings, rows.tokens[r]!, codes, out, r - from);
    }
  }
}
