// Entry of the voice encoder's thread: loads the runtime's upload codec once (workerData.spec: the checkpoint's codec
// and tokenizer, or the null runtime's), then answers each `{ id, audio, text }` with `{ id, upload }` (frames and
// file extension) or `{ id, error }`, so that decoding and encoding an upload never block HTTP or the engine.
import { parentPort, workerData } from 'node:worker_threads';
import { encodeReferenceAudio, loadCheckpointCodec } from '../codec/reference.ts';
import { Tokenizer } from '../text/tokenizer.ts';
import { parseSpeakerSegments } from '../text/userText.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { encodeUpload, NULL_UPLOAD_CODEC, type UploadCodec } from './encoder.ts';
import type { VoiceEncoderSource } from './encoder-thread.ts';

const port = parentPort!;
const { spec } = workerData as { spec: VoiceEncoderSource };

async function loadUploadCodec(runtime: VoiceEncoderSource): Promise<UploadCodec> {
  if (runtime.kind === 'null') return NULL_UPLOAD_CODEC;
  const [codec, tokenizer] = await Promise.all([loadCheckpointCodec(runtime.dir), Tokenizer.load(runtime.dir)]);
  return {
    checkTranscript: (text) => void parseSpeakerSegments(text, tokenizer.addedTokens, 'text'),
    frames: (samples, sampleRate) => encodeReferenceAudio(codec, [samples], sampleRate),
  };
}

const codec = loadUploadCodec(spec);
codec.catch(() => {});

port.on('message', async ({ id, audio, text }: { id: number; audio: Uint8Array; text: string }) => {
  try {
    port.postMessage({ id, upload: await encodeUpload(audio, text, await codec) });
  } catch (error) {
    port.postMessage({ id, error: serializeError(error) });
  }
});
