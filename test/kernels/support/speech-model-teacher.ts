// A teacher-forced pass of a speech model over one prompt, composed from the model's public pieces on its own
// backend: the backbone over prompt rows [0, P − 1) (each layer's residual stream read back through its
// LayerObserver), the candidate logits of every row, and the tower's layers with the true codes of row t + 1 (as
// prefill runs them), each per-codebook head's logits read back. The tower loop mirrors Tower.run op for op;
// `towerKeyValues` lets a test hold the mirror to Tower.run's own K/V writes.
import type { Backend, KeyValueSlab, Tensor } from '../../../src/backend/types.ts';
import { BufferPool } from '../../../src/model/buffer-pool.ts';
import { CallTableSet } from '../../../src/model/call-tables.ts';
import { codebookEmbeddingRow } from '../../../src/model/config.ts';
import type { SlotSpeechModel } from '../../../src/model/speech-model.ts';
import type { PromptRows } from '../../../src/model/types.ts';

export interface TeacherForced {
  /** Rows run: the prompt's rows but its last. */
  readonly rows: number;
  readonly hidden: number;
  readonly candidates: number;
  readonly codebookSize: number;
  /** Per backbone layer, the residual stream after it: [T, H]. */
  readonly residuals: Float64Array[];
  /** Candidate logits [T, N]. */
  readonly candidateLogits: Float64Array;
  /** Per codebook layer k (the logits of code[k + 1]): [T, codebook size]. */
  readonly headLogits: Float64Array[];
  /** Whether row t + 1 is a code row (the tower read real codes, not masked ones). */
  readonly nextIsCode: boolean[];
  /** Per tower layer, its K/V slab after the mirror's pass: keys then values of slot 0, rows [0, T). */
  readonly towerKeyValues: Float64Array[];
  /** The same after Tower.run itself over the same rows (the mirror must write the same bits); empty unless asked. */
  readonly towerRunKeyValues: Float64Array[];
}

/** Frame records [P, 1 + K] of the whole prompt. */
function promptRecords(rows: PromptRows, width: number): Int32Array {
  const total = rows.tokens.length;
  const records = new Int32Array(total * width);
  for (let row = 0; row < total; row++) {
    records[row * width] = rows.tokens[row]!;
    records.set(rows.codes.subarray(row * (width - 1), (row + 1) * (width - 1)), row * width + 1);
  }
  return records;
}

/** With `checkMirror`, Tower.run also runs over the same rows into slabs of its own (towerRunKeyValues). */
export function teacherForce<B>(model: SlotSpeechModel<B>, prompt: PromptRows, checkMirror = true): TeacherForced {
  const { backend, backbone, tower, config } = model;
  const { audio } = config;
  const width = 1 + audio.codebooks;
  const total = prompt.tokens.length;
  const rows = total - 1;
  const hidden = config.text.hiddenSize;
  const candidates = model.candidates.ids.length;
  const pool = new BufferPool(backend);
  const backboneSlabs = backbone.allocateSlabs(1, total);
  const towerSlabs = tower.allocateSlabs(1, total);
  const tables = new CallTableSet(backend, rows, 1).prefill([{ slot: 0, start: 0, count: rows }]);
  const hostRecords = promptRecords(prompt, width);
  const records = backend.fromHost('i32', [total, width], hostRecords);
  const x = pool.get('x', rows * hidden);
  const normed = pool.get('normed', rows * hidden);
  const codebook = audio.frameEmbeddingCodebook;
  const firstRow = codebookEmbeddingRow(audio, codebook, 0);
  const input = backend.viewRows(records, 0, rows);
  backend.embedRecords(backbone.tokenEmbeddings, model.codeEmbeddings, input, codebook, firstRow, x, rows);
  const residuals: Float64Array[] = [];
  backbone.forward(backboneSlabs, tables, x, rows, normed, (layer, stream) => {
    residuals[layer] = backend.toHost(stream, 0, rows * hidden);
  });
  const logits = pool.get('candidateLogits', rows * candidates, 'f32');
  backbone.candidateLogits(normed, rows, logits);
  const candidateLogits = backend.toHost(logits, 0, rows * candidates);
  const headLogits = runTower(model, pool, towerSlabs, tables, normed, backend.viewRows(records, 1, rows), rows);
  const nextIsCode = Array.from({ length: rows }, (_, t) => hostRecords[(t + 1) * width + 1]! >= 0);
  const runSlabs = checkMirror ? tower.allocateSlabs(1, total) : [];
  if (checkMirror) tower.run(runSlabs, tables, normed, backend.viewRows(records, 1, rows), rows);
  const slotElements = (slab: KeyValueSlab<B>) => rows * slab.keys.shape[2]! * slab.keys.shape[3]!;
  const readKeyValues = (slab: KeyValueSlab<B>) => {
    const count = slotElements(slab);
    const both = new Float64Array(2 * count);
    both.set(backend.toHost(slab.keys.data, 0, count), 0);
    both.set(backend.toHost(slab.values.data, 0, count), count);
    return both;
  };
  return {
    rows,
    hidden,
    candidates,
    codebookSize: audio.codebookSize,
    residuals,
    candidateLogits,
    headLogits,
    nextIsCode,
    towerKeyValues: towerSlabs.map(readKeyValues),
    towerRunKeyValues: runSlabs.map(readKeyValues),
  };
}

/** Tower.run's layers over `rows` prefill rows, reading back each per-codebook head's logits. */
function runTower<B>(
  model: SlotSpeechModel<B>,
  pool: BufferPool<B>,
  slabs: readonly KeyValueSlab<B>[],
  tables: ReturnType<CallTableSet<B>['prefill']>,
  hidden: B,
  records: Tensor<B>,
  rows: number,
): Float64Array[] {
  const { tower } = model;
  const backend: Backend<B> = model.backend;
  const { audio } = tower;
  const d = tower.config.hiddenSize;
  const eps = tower.config.rmsNormEps;
  const heads: Float64Array[] = [];
  let input = hidden;
  tower.layers.forEach((layer, index) => {
    const embedded = pool.get('embedded', rows * d);
    const firstRow = codebookEmbeddingRow(audio, layer.codebook, 0);
    backend.gatherCodes(tower.codeEmbeddings, records, layer.codebook, firstRow, embedded, rows);
    const normedCode = pool.get('normedCode', rows * d);
    const normedInput = pool.get('normedInput', rows * layer.inputWidth);
    backend.zeroCentredRmsNorm(embedded, layer.enorm, normedCode, rows, d, eps);
    backend.zeroCentredRmsNorm(input, layer.hnorm, normedInput, rows, layer.inputWidth, eps);
    const joined = pool.get('joined', rows * (d + layer.inputWidth));
    backend.concatenateColumns(normedCode, d, normedInput, layer.inputWidth, joined, rows);
    const x = pool.get('stream', rows * d);
    backend.linear(joined, layer.ehProj, x, rows);
    const normed = pool.get('towerNormed', rows * d);
    const branch = pool.get('branch', rows * d);
    backend.zeroCentredRmsNorm(x, layer.inputNorm, normed, rows, d, eps);
    backend.attention(layer.attention, normed, slabs[index]!, tables, branch, rows);
    backend.add(x, branch, rows * d);
    backend.zeroCentredRmsNorm(x, layer.postNorm, normed, rows, d, eps);
    backend.swiGlu(layer.mlp, normed, branch, rows);
    backend.add(x, branch, rows * d);
    const output = pool.get(index % 2 === 0 ? 'outputEven' : 'outputOdd', rows * d);
    backend.zeroCentredRmsNorm(x, layer.outNorm, output, rows, d, eps);
    input = output;
    if (layer.head !== undefined) {
      const logits = pool.get('headLogits', rows * audio.codebookSize, 'f32');
      backend.linear(output, layer.head, logits, rows, 'f32');
      heads[layer.codebook] = backend.toHost(logits, 0, rows * audio.codebookSize);
    }
  });
  return heads;
}
