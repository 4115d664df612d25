// Loads a transformers Qwen3.5-MoE fixture (tools/oracle/qwen35_moe.py): its config as a TextConfig, its checkpoint
// through our loader onto any backend, and the reference layer outputs. The committed one is `tiny` (FIXTURE_DIR);
// the `cuda` geometry's is made on the GPU machine and read from the folder a test is given.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { PrecisionName } from '../../src/backend/cpu/precision.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import type { Backend } from '../../src/backend/types.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { tensorToFloat32, tensorToInt32 } from '../../src/checkpoint/tensor.ts';
import { Backbone } from '../../src/model/backbone.ts';
import { BufferPool } from '../../src/model/buffer-pool.ts';
import { CallTableSet } from '../../src/model/call-tables.ts';
import { type LayerType, makeTextConfig, type TextConfig } from '../../src/model/config.ts';
import { TensorSource } from '../../src/model/tensor-source.ts';
import { backboneTensors, detectBackbonePrefix, detectExpertFormat } from '../../src/model/weights.ts';

const FIXTURE_DIR = join(import.meta.dirname, '../fixtures/model/qwen35-moe-tiny');

/** The config.json transformers wrote (or a file of the same keys) as our TextConfig. */
export function fixtureTextConfig(dir: string = FIXTURE_DIR): TextConfig {
  const json = JSON.parse(readFileSync(join(dir, 'checkpoint/config.json'), 'utf8'));
  return makeTextConfig({
    hiddenSize: json.hidden_size,
    layerTypes: json.layer_types as LayerType[],
    attentionHeads: json.num_attention_heads,
    keyValueHeads: json.num_key_value_heads,
    headDim: json.head_dim,
    ropeTheta: json.rope_parameters.rope_theta,
    partialRotaryFactor: json.rope_parameters.partial_rotary_factor,
    linearKeyHeads: json.linear_num_key_heads,
    linearValueHeads: json.linear_num_value_heads,
    linearKeyHeadDim: json.linear_key_head_dim,
    linearValueHeadDim: json.linear_value_head_dim,
    linearConvKernel: json.linear_conv_kernel_dim,
    experts: json.num_experts,
    expertsPerToken: json.num_experts_per_tok,
    expertIntermediate: json.moe_intermediate_size,
    sharedExpertIntermediate: json.shared_expert_intermediate_size,
    rmsNormEps: json.rms_norm_eps,
    maxPositions: json.max_position_embeddings,
    vocabSize: json.vocab_size,
    tieWordEmbeddings: json.tie_word_embeddings,
    eosTokenIds: [],
  });
}

export interface ReferenceOutputs {
  readonly inputIds: Int32Array;
  /** Each decoder layer's output [T, H]. */
  readonly hidden: Float32Array[];
  readonly norm: Float32Array;
  /** [T, V] */
  readonly logits: Float32Array;
}

export async function readReference(precision: 'fp32' | 'bf16', dir: string = FIXTURE_DIR): Promise<ReferenceOutputs> {
  const file = await SafetensorsCheckpoint.open(join(dir, `outputs-${precision}.safetensors`));
  try {
    const layers = file.names().filter((name) => name.startsWith('hidden.')).length;
    const hidden: Float32Array[] = [];
    for (let layer = 0; layer < layers; layer++) hidden.push(tensorToFloat32(await file.read(`hidden.${layer}`)));
    return {
      inputIds: tensorToInt32(await file.read('input_ids')),
      hidden,
      norm: tensorToFloat32(await file.read('norm')),
      logits: tensorToFloat32(await file.read('logits')),
    };
  } finally {
    await file.close();
  }
}

export async function loadFixtureBackbone(
  precision: PrecisionName,
  deltaRule: 'recurrent' | 'chunked' = 'recurrent',
): Promise<Backbone<CpuBuffer>> {
  return loadBackboneOn(new CpuBackend({ precision, deltaRule }), FIXTURE_DIR);
}

/** The fixture in `dir` loaded onto `backend` through the model's own loader, every vocabulary id a candidate. */
export async function loadBackboneOn<B>(backend: Backend<B>, dir: string): Promise<Backbone<B>> {
  const text = fixtureTextConfig(dir);
  const checkpoint = await SafetensorsCheckpoint.open(join(dir, 'checkpoint'));
  try {
    const prefix = detectBackbonePrefix(checkpoint.names());
    const specs = backboneTensors(text, { prefix, experts: detectExpertFormat(checkpoint.names(), prefix) });
    const source = new TensorSource(checkpoint, backend, specs);
    const candidates = Int32Array.from({ length: text.vocabSize }, (_, id) => id);
    return await Backbone.load(source, text, prefix, candidates);
  } finally {
    await checkpoint.close();
  }
}

export interface BackboneRun {
  readonly hidden: Float64Array[];
  readonly logits: Float64Array;
}

/** Runs the fixture input through the backbone (one lane slot), cut into consecutive calls of the given row counts. */
export function runInChunks<B>(
  backbone: Backbone<B>,
  inputIds: Int32Array,
  chunkRows: (start: number) => number,
): BackboneRun {
  const { backend } = backbone;
  const hiddenSize = backbone.text.hiddenSize;
  const rows = inputIds.length;
  const heads = backbone.candidateHead.shape[0]!;
  const slabs = backbone.allocateSlabs(1, rows);
  const tableSet = new CallTableSet(backend, rows, 1);
  const pool = new BufferPool(backend);
  const hidden = backbone.layers.map(() => new Float64Array(rows * hiddenSize));
  const logits = new Float64Array(rows * heads);
  // Text records: (token, −1): the token table's rows.
  const records = backend.allocate('i32', [rows, 2]);
  const values = new Int32Array(rows * 2).fill(-1);
  for (let t = 0; t < rows; t++) values[2 * t] = inputIds[t]!;
  backend.writeIntegers(records, 0, values);
  for (let start = 0; start < rows; ) {
    const count = Math.min(chunkRows(start), rows - start);
    const tables = tableSet.prefill([{ slot: 0, start, count }]);
    const x = pool.get('x', count * hiddenSize);
    const table = backbone.tokenEmbeddings;
    backend.embedRecords(table, table, backend.viewRows(records, start, count), 0, 0, x, count);
    const normed = pool.get('normed', count * hiddenSize);
    backbone.forward(slabs, tables, x, count, normed, (layer, stream) => {
      hidden[layer]!.set(backend.toHost(stream, 0, count * hiddenSize), start * hiddenSize);
    });
    const out = pool.get('logits', count * heads, 'f32');
    backbone.candidateLogits(normed, count, out);
    logits.set(backend.toHost(out, 0, count * heads), start * heads);
    start += count;
  }
  return { hidden, logits };
}

/** max |a − b| / max |b|. */
export function relativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return worst / scale;
}

/** The median over rows of (max |a − b| / max |b|) within each row. */
export function medianRowError(a: ArrayLike<number>, b: ArrayLike<number>, rows: number): number {
  const cols = b.length / rows;
  const errors: number[] = [];
  for (let t = 0; t < rows; t++) {
    let worst = 0;
    let scale = 0;
    for (let c = t * cols; c < (t + 1) * cols; c++) {
      worst = Math.max(worst, Math.abs(a[c]! - b[c]!));
      scale = Math.max(scale, Math.abs(b[c]!));
    }
    errors.push(worst / scale);
  }
  errors.sort((x, y) => x - y);
  return errors[Math.floor(rows / 2)]!;
}

/** Rows whose argmax agrees, and the rows whose reference top-2 margin exceeds `margin` but disagree. */
export function topOneAgreement(ours: ArrayLike<number>, reference: ArrayLike<number>, rows: number, cols: number) {
  let equal = 0;
  const disagreeing: { row: number; margin: number }[] = [];
  for (let t = 0; t < rows; t++) {
    let bestOurs = 0;
    let bestReference = 0;
    for (let c = 1; c < cols; c++) {
      if (ours[t * cols + c]! > ours[t * cols + bestOurs]!) bestOurs = c;
      if (reference[t * cols + c]! > reference[t * cols + bestReference]!) bestReference = c;
    }
    if (bestOurs === bestReference) {
      equal++;
      continue;
    }
    disagreeing.push({ row: t, margin: reference[t * cols + bestReference]! - reference[t * cols + bestOurs]! });
  }
  return { equal, disagreeing };
}
