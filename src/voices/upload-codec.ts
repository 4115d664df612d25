// The upload codec the voice encoder's thread loads once: the null runtime's, or a checkpoint's tokenizer (to check
// transcripts) and codec, encoding on the cpu or on CUDA as the device choice says. The CUDA encoder runs in this
// thread's own context, so an encode never waits behind the engine's frame steps or the decode thread's passes.
import { CudaContext } from '../backend/cuda/context.ts';
import type { CodecPrecision } from '../backend/cuda/ops/codecConvArguments.ts';
import type { Codec } from '../codec/codec.ts';
import { CudaCodecEncoder, REFERENCE_FRAMES_PER_PASS } from '../codec/cuda/encoder.ts';
import { encodeReferenceAudio, loadCheckpointCodec, referencePcm } from '../codec/reference.ts';
import type { Frame } from '../model/types.ts';
import { Tokenizer } from '../text/tokenizer.ts';
import { parseSpeakerSegments } from '../text/userText.ts';
import { NULL_UPLOAD_CODEC, type UploadCodec } from './encoder.ts';
import type { VoiceEncoderSource } from './encoder-thread.ts';

/** Mono samples → frames on CUDA, the device encoder made once and kept for the thread's life. */
export function cudaReferenceFrames(
  codec: Codec,
  precision: CodecPrecision,
): { frames(samples: Float32Array, sampleRate: number): Frame[]; close(): void } {
  const cuda = new CudaContext();
  let encoder: CudaCodecEncoder;
  try {
    encoder = CudaCodecEncoder.create(cuda, codec.config, codec.weights, {
      framesPerPass: REFERENCE_FRAMES_PER_PASS,
      precision,
    });
  } catch (error) {
    cuda.close();
    throw error;
  }
  return {
    frames: (samples, sampleRate) =>
      encoder.encode(referencePcm([samples], sampleRate, codec.config.sampleRate)).frames,
    close() {
      encoder.close();
      cuda.close();
    },
  };
}

/** The upload codec of a runtime: where its frames come from and how its transcripts are checked. */
export async function loadUploadCodec(runtime: VoiceEncoderSource): Promise<UploadCodec> {
  if (runtime.kind === 'null') return NULL_UPLOAD_CODEC;
  const [codec, tokenizer] = await Promise.all([loadCheckpointCodec(runtime.dir), Tokenizer.load(runtime.dir)]);
  const device = runtime.device ?? { backend: 'cpu' };
  const frames =
    device.backend === 'cuda'
      ? cudaReferenceFrames(codec, device.precision).frames
      : (samples: Float32Array, sampleRate: number) => encodeReferenceAudio(codec, [samples], sampleRate);
  return {
    checkTranscript: (text) => void parseSpeakerSegments(text, tokenizer.addedTokens, 'text'),
    frames,
  };
}
