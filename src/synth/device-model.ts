// A synthetic speech model built straight into device memory, without a checkpoint: the config `synth` would write
// for a preset (FP8 experts), every weight drawn on the device with synth's values (device-weights.ts), and the model
// assembled by the same loaders a checkpoint goes through. The candidate ids sit at the top of the padded vocabulary
// as the synthetic tokenizer places its semantic tokens (their positions do not change any cost).
import type { CudaContext } from '../backend/cuda/context.ts';
import type { CudaBuffer } from '../backend/cuda/tensors.ts';
import type { Backend } from '../backend/types.ts';
import { tensorByteLength } from '../checkpoint/tensor.ts';
import { REAL_CODEC_CONFIG } from '../codec/config.ts';
import { Backbone } from '../model/backbone.ts';
import type { CandidateIds } from '../model/candidates.ts';
import {
  DEFAULT_PROMPT_FORMAT,
  type Drama3Config,
  FP8_BLOCK_QUANTIZATION,
  type ModelPreset,
  makeTextConfig,
} from '../model/config.ts';
import { SlotSpeechModel } from '../model/speech-model.ts';
import { Tower } from '../model/tower.ts';
import { backboneNames, expectedTensors, type TensorPart, type TensorSpec } from '../model/weights.ts';
import { deviceFill } from './device-init.ts';
import { type DeviceWeightProgress, DeviceWeightSource } from './device-weights.ts';
import { residualGains } from './init.ts';

const PREFIX = 'model.';

/** Semantic ids, then <|im_end|> just below them, near the end of the padded vocabulary. */
export function syntheticCandidates(vocabSize: number, semanticCount: number): CandidateIds {
  const semanticBegin = vocabSize - 64 - semanticCount;
  const imEnd = semanticBegin - 1;
  const ids = new Int32Array(semanticCount + 1);
  for (let code = 0; code < semanticCount; code++) ids[code] = semanticBegin + code;
  ids[semanticCount] = imEnd;
  return { semanticBegin, imEnd, ids };
}

/** The config of a synthetic checkpoint of `preset` with FP8 experts and the candidates' special ids. */
export function syntheticDeviceConfig(preset: ModelPreset): { config: Drama3Config; candidates: CandidateIds } {
  const candidates = syntheticCandidates(preset.text.vocabSize, preset.audio.semanticCodebookSize);
  const config: Drama3Config = {
    text: makeTextConfig({ ...preset.text, eosTokenIds: [candidates.imEnd] }),
    tower: preset.tower,
    audio: preset.audio,
    codec: REAL_CODEC_CONFIG,
    quantization: FP8_BLOCK_QUANTIZATION,
    specialTokens: {
      imStart: undefined,
      imEnd: candidates.imEnd,
      voice: undefined,
      text: undefined,
      interleave: undefined,
      semanticBegin: candidates.semanticBegin,
      speakerBegin: undefined,
    },
    synthetic: true,
    promptFormat: DEFAULT_PROMPT_FORMAT,
  };
  return { config, candidates };
}

/** The weight map of the device model (FP8 experts, as `synth --experts fp8` writes them). */
export function syntheticDeviceSpecs(config: Drama3Config): TensorSpec[] {
  return expectedTensors(config, { prefix: PREFIX, experts: 'fp8' });
}

export interface DeviceModelOptions {
  readonly seed?: number;
  readonly prefillChunk?: number;
  /** Called after each tensor with the tensors and bytes drawn so far and the weight map's totals. */
  readonly onProgress?: (done: DeviceWeightProgress, total: DeviceWeightProgress) => void;
}

export interface DeviceModel {
  readonly model: SlotSpeechModel<CudaBuffer>;
  readonly specs: readonly TensorSpec[];
  readonly weights: DeviceWeightSource;
}

/** Builds the synthetic model of `preset` in `backend`'s device memory (`cuda` is the backend's context). */
export async function buildDeviceModel(
  cuda: CudaContext,
  backend: Backend<CudaBuffer> & { addWeightOwner?(giveBack: (pointer: bigint) => boolean): void },
  preset: ModelPreset,
  options: DeviceModelOptions = {},
): Promise<DeviceModel> {
  const { config, candidates } = syntheticDeviceConfig(preset);
  const specs = syntheticDeviceSpecs(config);
  const total = {
    tensors: specs.length,
    bytes: specs.reduce((sum, spec) => sum + tensorByteLength(spec.dtype, spec.shape), 0),
  };
  const { onProgress } = options;
  const onTensor = onProgress && ((done: DeviceWeightProgress) => onProgress(done, total));
  const seed = options.seed ?? 0;
  const gains = residualGains(config);
  const deviceBytes = deviceDrawnBytes(specs, seed, gains, candidates.ids.length);
  const weights = new DeviceWeightSource(cuda, backend, specs, seed, gains, deviceBytes, onTensor);
  // The MoE block gives the routed experts back once it has packed them (their arena allocations then free).
  backend.addWeightOwner?.((pointer) => weights.giveBack(pointer));
  try {
    const backbone = await Backbone.load(weights, config.text, PREFIX, candidates.ids);
    const tower = await Tower.load(weights, config.tower, config.audio, config.text);
    const codeEmbeddings = await weights.tensor(backboneNames(PREFIX).codebookEmbeddings);
    weights.finish();
    const loaded = { config, unknownKeys: [], defaulted: [] };
    const model = new SlotSpeechModel(
      loaded,
      backend,
      backbone,
      tower,
      codeEmbeddings,
      candidates,
      options.prefillChunk ?? 256,
    );
    return { model, specs, weights };
  } catch (error) {
    weights.release();
    throw error;
  }
}

/** Bytes the device fills write: every tensor not drawn on the host, the output head at its candidates' rows. */
function deviceDrawnBytes(
  specs: readonly TensorSpec[],
  seed: number,
  gains: Record<TensorPart, number>,
  candidates: number,
): number {
  let total = 0;
  for (const spec of specs) {
    if (spec.role === 'expert_scale') total += tensorByteLength(spec.dtype, spec.shape);
    else if (deviceFill(spec, seed, gains[spec.part]).kind !== 'host') {
      const bytes = tensorByteLength(spec.dtype, spec.shape);
      total += spec.role === 'output_head' ? (bytes / spec.shape[0]!) * candidates : bytes;
    }
  }
  return total;
}
