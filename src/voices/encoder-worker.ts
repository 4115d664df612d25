// Entry of the voice encoder's thread: loads the checkpoint's codec once (workerData.dir), then answers each
// `{ id, audio }` with `{ id, upload }` (frames and file extension) or `{ id, error }`, so that encoding an upload
// never blocks the HTTP thread.
import { parentPort, workerData } from 'node:worker_threads';
import { encodeReferenceAudio, loadCheckpointCodec } from '../codec/reference.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { encodeUpload } from './encoder.ts';

const port = parentPort!;
const codec = loadCheckpointCodec((workerData as { dir: string }).dir);
codec.catch(() => {});

port.on('message', async ({ id, audio }: { id: number; audio: Uint8Array }) => {
  try {
    const loaded = await codec;
    const upload = await encodeUpload(audio, (samples, sampleRate) =>
      encodeReferenceAudio(loaded, [samples], sampleRate),
    );
    port.postMessage({ id, upload });
  } catch (error) {
    port.postMessage({ id, error: serializeError(error) });
  }
});
