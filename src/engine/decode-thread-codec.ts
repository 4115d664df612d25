// The engine thread's codec where the decode thread decodes (engine-worker.ts): the codec's rate and frame from its
// config, loaded once that thread's codec is; codec.pth is read there alone, not a second time here. Opening a stream
// here is a bug, refused by name.
import { loadCheckpointCodecConfig } from '../codec/checkpoint-codec.ts';
import { DramaError } from '../errors.ts';
import type { EngineCodecLoader } from './checkpoint-runtime.ts';

/** The codec loader of a runtime whose decoding is the decode thread's; `decoderReady` settles once it can decode. */
export function decodeThreadCodec(decoderReady: Promise<unknown>): EngineCodecLoader {
  return async (dir) => {
    const config = await loadCheckpointCodecConfig(dir);
    await decoderReady;
    return {
      sampleRate: config.sampleRate,
      frameLength: config.frameLength,
      openStream() {
        throw new DramaError('CODEC_IN_DECODE_THREAD', 'this engine decodes in its decode thread, not here', {
          kind: 'internal',
        });
      },
    };
  };
}
