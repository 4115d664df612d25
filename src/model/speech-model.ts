// Drama 3 as the engine drives it (SpeechModel, src/model/types.ts) on the cpu backend: prompt rows → backbone prefill
// (in pieces of at most prefillChunk rows) with the tower teacher-forced on the prompt's code rows → frame rounds.
// A frame: candidate logits of the last backbone row → `main` → tower draws code[1..9] → the frame row goes into the
// backbone at the next round. Each lane draws with its own settings keyed by (seed, frame, column), so a lane gives
// the same frames alone or in a batch, and in any prefill chunking.
import { CpuBackend } from '../backend/cpu/backend.ts';
import type { PrecisionName } from '../backend/cpu/precision.ts';
import type { KeyValueCache } from '../backend/types.ts';
import { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { DramaError } from '../errors.ts';
import type { FloatArray } from '../numeric/float-array.ts';
import { Backbone, type BackboneState } from './backbone.ts';
import { type CandidateIds, candidateIds } from './candidates.ts';
import { type Drama3Config, type LoadedConfig, loadConfig } from './config.ts';
import { type InputEmbeddings, writeFrameRow, writePromptRows } from './input-rows.ts';
import { FrameSampler } from './sampler.ts';
import { TensorSource } from './tensor-source.ts';
import { Tower } from './tower.ts';
import type { FrameOutcome, Lane, PromptRows, SamplingSettings, SpeechModel } from './types.ts';
import { backboneNames } from './weights.ts';
import { assertWeightsMatch, checkWeights } from './weights-check.ts';

const DEFAULT_PREFILL_CHUNK = 256;

export interface SpeechModelOptions {
  /** Most prompt rows one backbone call takes. */
  readonly prefillChunk?: number;
  readonly backend?: 'cpu';
  /** The cpu backend's precision policy (bf16 emulates the GPU; fp32/fp64 for checks). */
  readonly precision?: PrecisionName;
}

/** A lane's whole state after a prefill (copies), to start other lanes from: the reference cache's entry. */
export interface LaneSnapshot {
  readonly promptRows: number;
  readonly promptComplete: boolean;
  readonly backbone: BackboneState<FloatArray>;
  readonly towerCaches: KeyValueCache<FloatArray>[];
  readonly lastHidden: FloatArray;
}

function copyCache(cache: KeyValueCache<FloatArray>): KeyValueCache<FloatArray> {
  return { keys: cache.keys.slice(), values: cache.values.slice(), length: cache.length, capacity: cache.capacity };
}

function copyBackboneState(state: BackboneState<FloatArray>): BackboneState<FloatArray> {
  return {
    caches: state.caches.map((cache) => (cache === undefined ? undefined : copyCache(cache))),
    deltaStates: state.deltaStates.map((delta) =>
      delta === undefined ? undefined : { conv: delta.conv.slice(), recurrent: delta.recurrent.slice() },
    ),
    position: state.position,
  };
}

class CpuLane implements Lane {
  position = 0;
  promptRows = 0;
  promptComplete = false;
  framesGenerated = 0;
  released = false;
  /** The final-norm backbone row whose logits give the next `main`. [D] */
  readonly lastHidden: FloatArray;
  /** The last frame's backbone input row, consumed at the start of the next step. [D] */
  readonly pendingRow: FloatArray;
  hasPendingRow = false;
  /** Codes of the frame being drawn. [K] */
  readonly frameCodes: Int32Array;

  constructor(
    readonly sampler: FrameSampler,
    readonly backbone: BackboneState<FloatArray>,
    readonly towerCaches: KeyValueCache<FloatArray>[],
    hiddenSize: number,
    codebooks: number,
    allocate: (count: number) => FloatArray,
  ) {
    this.lastHidden = allocate(hiddenSize);
    this.pendingRow = allocate(hiddenSize);
    this.frameCodes = new Int32Array(codebooks);
  }
}

/** Milliseconds spent per stage since load (the bench reads them). */
export interface StageTimes {
  prefill: number;
  backbone: number;
  tower: number;
  sampler: number;
}

export class CpuSpeechModel implements SpeechModel {
  readonly config: Drama3Config;
  /** Key paths in config.json that nothing read: the caller reports them once (never fatal). */
  readonly unknownKeys: readonly string[];
  /** config.json sections that were absent and filled in from the full geometry's guesses. */
  readonly defaulted: readonly string[];
  readonly contextRows: number;
  readonly stageTimes: StageTimes = { prefill: 0, backbone: 0, tower: 0, sampler: 0 };
  readonly synthetic: boolean;
  private readonly embeddings: InputEmbeddings<FloatArray>;
  private readonly logits: FloatArray;

  constructor(
    loaded: LoadedConfig,
    readonly backend: CpuBackend,
    readonly backbone: Backbone<FloatArray>,
    readonly tower: Tower<FloatArray>,
    codeEmbeddings: FloatArray,
    readonly candidates: CandidateIds,
    readonly prefillChunk: number,
  ) {
    const config = loaded.config;
    this.config = config;
    this.unknownKeys = loaded.unknownKeys;
    this.defaulted = loaded.defaulted;
    this.contextRows = config.text.maxPositions;
    this.synthetic = config.synthetic;
    this.embeddings = {
      backend,
      audio: config.audio,
      hiddenSize: config.text.hiddenSize,
      tokenEmbeddings: backbone.tokenEmbeddings,
      codeEmbeddings,
    };
    this.logits = backend.allocate(candidates.ids.length);
  }

  newLane(sampling: SamplingSettings): CpuLane {
    const { text, audio } = this.config;
    return new CpuLane(
      new FrameSampler(sampling, this.candidates.ids.length),
      this.backbone.newState(),
      this.tower.newCaches(),
      text.hiddenSize,
      audio.codebooks,
      (count) => this.backend.allocate(count),
    );
  }

  prefill(lane: Lane, rows: PromptRows, from: number, to: number): void {
    const state = this.own(lane);
    const total = rows.tokens.length;
    if (from !== state.promptRows || state.framesGenerated > 0 || to < from || to > total) {
      throw new DramaError(
        'PREFILL_OUT_OF_ORDER',
        `prefill [${from}, ${to}) of ${total} rows does not continue the lane at row ${state.promptRows}`,
        { kind: 'internal' },
      );
    }
    if (to > this.contextRows) {
      throw new DramaError('CONTEXT_EXCEEDED', `${to} rows exceed the model context of ${this.contextRows}`, {
        kind: 'invalid_input',
      });
    }
    for (let start = from; start < to; start += this.prefillChunk)
      this.prefillPiece(state, rows, start, Math.min(to, start + this.prefillChunk));
    state.promptComplete = to === total;
  }

  /** Copies the state of a lane that has been prefilled and has drawn no frame yet. */
  snapshot(lane: Lane): LaneSnapshot {
    const state = this.own(lane);
    if (state.framesGenerated > 0) {
      throw new DramaError('SNAPSHOT_AFTER_FRAMES', 'a lane can be snapshot only before its first frame', {
        kind: 'internal',
      });
    }
    return {
      promptRows: state.promptRows,
      promptComplete: state.promptComplete,
      backbone: copyBackboneState(state.backbone),
      towerCaches: state.towerCaches.map(copyCache),
      lastHidden: state.lastHidden.slice(),
    };
  }

  /** A new lane holding a copy of the snapshot's state, drawing with `sampling`. */
  restore(snapshot: LaneSnapshot, sampling: SamplingSettings): Lane {
    const { text, audio } = this.config;
    const lane = new CpuLane(
      new FrameSampler(sampling, this.candidates.ids.length),
      copyBackboneState(snapshot.backbone),
      snapshot.towerCaches.map(copyCache),
      text.hiddenSize,
      audio.codebooks,
      (count) => this.backend.allocate(count),
    );
    lane.lastHidden.set(snapshot.lastHidden);
    lane.promptRows = snapshot.promptRows;
    lane.promptComplete = snapshot.promptComplete;
    lane.position = snapshot.promptRows;
    return lane;
  }

  step(lanes: readonly Lane[]): FrameOutcome[] {
    return lanes.map((lane) => this.stepLane(this.own(lane)));
  }

  release(lane: Lane): void {
    this.own(lane).released = true;
  }

  private prefillPiece(state: CpuLane, rows: PromptRows, from: number, to: number): void {
    const { backend } = this;
    const hidden = this.config.text.hiddenSize;
    const codebooks = this.config.audio.codebooks;
    const count = to - from;
    const x = backend.allocate(count * hidden);
    writePromptRows(this.embeddings, rows, from, to, x);
    const normed = backend.allocate(count * hidden);
    this.backbone.forward(state.backbone, x, count, normed);
    // Tower row t reads the codes of row t + 1; the last prompt row's tower row waits for the first frame.
    const towerRows = Math.min(to, rows.tokens.length - 1) - from;
    if (towerRows > 0) {
      const codes = rows.codes.slice((from + 1) * codebooks, (from + 1 + towerRows) * codebooks);
      this.tower.run(state.towerCaches, normed, codes, towerRows);
    }
    state.lastHidden.set(normed.subarray((count - 1) * hidden, count * hidden));
    state.promptRows = to;
    state.position = to;
  }

  private stepLane(state: CpuLane): FrameOutcome {
    if (!state.promptComplete) {
      throw new DramaError(
        'STEP_BEFORE_PREFILL',
        `step on a lane whose prompt is prefilled to row ${state.promptRows} only`,
        {
          kind: 'internal',
        },
      );
    }
    const { candidates, stageTimes } = this;
    const started = performance.now();
    if (state.hasPendingRow) {
      this.backbone.forward(state.backbone, state.pendingRow, 1, state.lastHidden);
      state.hasPendingRow = false;
    }
    this.backbone.candidateLogits(state.lastHidden, 1, this.logits);
    const backboneDone = performance.now();
    stageTimes.backbone += backboneDone - started;
    const semanticCount = this.config.audio.semanticCodebookSize;
    const frame = state.framesGenerated;
    const chosen = state.sampler.drawMain(this.logits, candidates.ids.length, semanticCount, frame);
    const mainDrawn = performance.now();
    stageTimes.sampler += mainDrawn - backboneDone;
    if (chosen >= semanticCount) return { end: true };
    const codes = state.frameCodes;
    codes.fill(-1);
    codes[0] = chosen;
    let drawing = 0;
    this.tower.run(state.towerCaches, state.lastHidden, codes, 1, (logits, count, column) => {
      const drawStarted = performance.now();
      const code = state.sampler.drawCode(logits, count, frame, column);
      drawing += performance.now() - drawStarted;
      return code;
    });
    stageTimes.sampler += drawing;
    stageTimes.tower += performance.now() - mainDrawn - drawing;
    writeFrameRow(this.embeddings, candidates.semanticBegin + chosen, codes, state.pendingRow, 0);
    state.hasPendingRow = true;
    state.framesGenerated++;
    state.position++;
    return { end: false, frame: codes.slice() };
  }

  private own(lane: Lane): CpuLane {
    if (!(lane instanceof CpuLane) || lane.released) {
      throw new DramaError('LANE_NOT_LIVE', 'the lane was not made by this model or was released', {
        kind: 'internal',
      });
    }
    return lane;
  }
}

export async function loadSpeechModel(
  checkpointDir: string,
  options: SpeechModelOptions = {},
): Promise<CpuSpeechModel> {
  const loaded = await loadConfig(checkpointDir);
  const config = loaded.config;
  const prefillChunk = options.prefillChunk ?? DEFAULT_PREFILL_CHUNK;
  if (!Number.isInteger(prefillChunk) || prefillChunk < 1) {
    throw new DramaError('PREFILL_CHUNK_INVALID', `prefill chunk ${prefillChunk} must be a positive integer`, {
      param: 'prefill-chunk',
    });
  }
  const checkpoint = await SafetensorsCheckpoint.open(checkpointDir);
  try {
    const check = checkWeights(config, checkpoint);
    assertWeightsMatch(check, checkpointDir);
    const backend = new CpuBackend({ precision: options.precision ?? 'bf16' });
    const source = new TensorSource(checkpoint, backend);
    const candidates = await candidateIds(checkpointDir, config);
    const backbone = await Backbone.load(source, config.text, check.prefix, candidates.ids);
    const tower = await Tower.load(source, config.tower, config.audio, config.text);
    const codeEmbeddings = await source.vector(backboneNames(check.prefix).codebookEmbeddings, [
      config.audio.codebookEmbeddingRows,
      config.text.hiddenSize,
    ]);
    return new CpuSpeechModel(loaded, backend, backbone, tower, codeEmbeddings, candidates, prefillChunk);
  } finally {
    await checkpoint.close();
  }
}
