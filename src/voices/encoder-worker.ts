// Entry of the voice encoder's thread: loads the runtime's upload codec once (workerData.spec: the checkpoint's codec
// and tokenizer on the cpu or CUDA, or the null runtime's; upload-codec.ts), then answers each `{ id, audio, text }`
// with `{ id, upload }` (frames and file extension) or `{ id, error }`, so that decoding and encoding an upload never
// block HTTP or the engine.
import { parentPort, workerData } from 'node:worker_threads';
import { serializeError } from '../threads/serialize-error.ts';
import { encodeUpload } from './encoder.ts';
import type { VoiceEncoderSource } from './encoder-thread.ts';
import { loadUploadCodec } from './upload-codec.ts';

const port = parentPort!;
const { spec } = workerData as { spec: VoiceEncoderSource };

const codec = loadUploadCodec(spec);
codec.catch(() => {});

port.on('message', async ({ id, audio, text }: { id: number; audio: Uint8Array; text: string }) => {
  try {
    port.postMessage({ id, upload: await encodeUpload(audio, text, await codec) });
  } catch (error) {
    port.postMessage({ id, error: serializeError(error) });
  }
});
