// The engine's codec on CUDA (src/codec/cuda/): each request's stream holds a lane slot of the device decoder, and
// every stream with new frames in a decode pass goes through one launch sequence. Frames are checked first
// (engine-codes.ts): a code outside its codebook refuses that request alone.
import { CudaContext } from '../backend/cuda/context.ts';
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import { loadCheckpointCodecShapes } from '../codec/checkpoint-codec.ts';
import type { Codec } from '../codec/codec.ts';
import { CudaCodecDecoder } from '../codec/cuda/decoder.ts';
import { decoderDeviceBytes, encoderDeviceBytes, zeroWeights } from '../codec/cuda/device-bytes.ts';
import { REFERENCE_FRAMES_PER_PASS } from '../codec/cuda/encoder.ts';
import { DramaError } from '../errors.ts';
import type { CodecStream } from '../model/types.ts';
import { checkEngineCodes } from './engine-codes.ts';
import type { EngineCodec, StreamPush } from './runtime.ts';

export interface CudaCodecSettings {
  /** Streams that can be open at once. */
  readonly lanes: number;
  readonly precision: CodecPrecision;
  /** Frames one launch sequence decodes, all lanes together. */
  readonly maxFramesPerCall: number;
}

/**
 * Frames one decode launch sequence takes: 64 lanes' 16-frame groups together (the scheduler's last decode group),
 * since the codec's launches use the device better the more rows they hold (docs/gpu.md has the serve figures).
 */
const FRAMES_PER_CALL = 1024;

/** f16 by default: the release's precision, on tensor cores; f32 is the checking mode. */
export const DEFAULT_CUDA_CODEC_SETTINGS: CudaCodecSettings = {
  lanes: 64,
  precision: 'f16',
  maxFramesPerCall: FRAMES_PER_CALL,
};

/**
 * The settings a loaded engine's codec runs with: the defaults at `precision`, with DRAMA3_CODEC_FRAMES_PER_CALL
 * overriding the frames a call (bench/gpu-serve-codec-calls.sh compares); read when a codec loads, not at import.
 */
export function cudaCodecSettings(precision: CodecPrecision): CudaCodecSettings {
  const given = process.env.DRAMA3_CODEC_FRAMES_PER_CALL;
  const settings = { ...DEFAULT_CUDA_CODEC_SETTINGS, precision };
  if (given === undefined || given === '') return settings;
  const frames = Number(given);
  if (!Number.isInteger(frames) || frames < 1) {
    throw new DramaError('CODEC_CALL_FRAMES_INVALID', `DRAMA3_CODEC_FRAMES_PER_CALL must be a positive integer`, {
      kind: 'invalid_input',
      param: 'DRAMA3_CODEC_FRAMES_PER_CALL',
    });
  }
  return { ...settings, maxFramesPerCall: frames };
}

/**
 * Device bytes the CUDA codec's contexts hold beside their lanes' state, set aside by the lane budget: the decode
 * thread's decoder (weights and call scratch) and the voice encoder's (weights, state and pass scratch), which
 * encodes references where the codec decodes. Sized by the same uploads against a counting context (device-bytes.ts).
 */
export function cudaCodecDeviceBytes(codec: Pick<Codec, 'config' | 'weights'>, settings: CudaCodecSettings): number {
  const { config, weights } = codec;
  const decoder = decoderDeviceBytes(config, weights, {
    slots: settings.lanes,
    maxFramesPerCall: settings.maxFramesPerCall,
    precision: settings.precision,
  });
  const encoder = encoderDeviceBytes(config, weights, {
    framesPerPass: REFERENCE_FRAMES_PER_PASS,
    precision: settings.precision,
  });
  return decoder.weights + decoder.scratch + encoder.weights + encoder.scratch;
}

/** The same bytes for a checkpoint folder's codec, from its config and codec.pth's index, before its weights load. */
export async function checkpointCodecDeviceBytes(dir: string, settings: CudaCodecSettings): Promise<number> {
  const { config, shapes } = await loadCheckpointCodecShapes(dir);
  return cudaCodecDeviceBytes({ config, weights: zeroWeights(shapes) }, settings);
}

export interface CudaEngineCodec extends EngineCodec {
  close(): void;
}

export function cudaEngineCodec(
  codec: Codec,
  settings: CudaCodecSettings = DEFAULT_CUDA_CODEC_SETTINGS,
): CudaEngineCodec {
  const cuda = new CudaContext();
  let decoder: CudaCodecDecoder;
  try {
    decoder = CudaCodecDecoder.create(cuda, codec.config, codec.weights, {
      slots: settings.lanes,
      maxFramesPerCall: settings.maxFramesPerCall,
      precision: settings.precision,
    });
  } catch (error) {
    cuda.close();
    throw error;
  }
  const slots = new Map<CodecStream, number>();
  return {
    sampleRate: codec.config.sampleRate,
    frameLength: codec.config.frameLength,
    openStream() {
      const slot = decoder.acquire();
      const stream: CodecStream = {
        push(frames) {
          checkEngineCodes(frames, codec.config);
          return decoder.decode([{ slot, frames }])[0]!;
        },
        close() {
          if (!slots.delete(stream)) return;
          decoder.release(slot);
        },
      };
      slots.set(stream, slot);
      return stream;
    },
    decodeTogether(pushes: readonly StreamPush[]) {
      const results = new Array<Float32Array | Error>(pushes.length);
      const lanes: { slot: number; frames: StreamPush['frames'] }[] = [];
      const indices: number[] = [];
      pushes.forEach(({ stream, frames }, index) => {
        const slot = slots.get(stream);
        try {
          if (slot === undefined) {
            throw new DramaError('CODEC_STREAM_UNKNOWN', 'a decode pass was handed a stream this codec did not open', {
              kind: 'internal',
            });
          }
          checkEngineCodes(frames, codec.config);
          lanes.push({ slot, frames });
          indices.push(index);
        } catch (error) {
          results[index] = error instanceof Error ? error : new Error(String(error));
        }
      });
      if (lanes.length > 0) {
        decoder.decode(lanes).forEach((samples, lane) => {
          results[indices[lane]!] = samples;
        });
      }
      return results;
    },
    close() {
      decoder.close();
      cuda.close();
    },
  };
}

/**
 * The CUDA codec made at its first stream: the engine thread's runtime carries one for inline engines, while the
 * server's engine decodes on its decode thread and never opens a stream here, so holds no device memory for it.
 */
export function lazyCudaEngineCodec(codec: Codec, settings: CudaCodecSettings): CudaEngineCodec {
  let made: CudaEngineCodec | undefined;
  const get = () => {
    made ??= cudaEngineCodec(codec, settings);
    return made;
  };
  return {
    sampleRate: codec.config.sampleRate,
    frameLength: codec.config.frameLength,
    openStream: () => get().openStream(),
    decodeTogether: (pushes) => get().decodeTogether!(pushes),
    close: () => made?.close(),
  };
}
