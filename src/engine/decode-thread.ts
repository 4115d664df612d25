// Entry of the decode thread: the codec beside the engine thread, so that decoding a request's frames overlaps the
// next frame rounds. Commands come from the engine thread, frames as one [N, K] int32 array; a request's audio and
// its terminal event go straight to the main thread on the port it handed over (in per-request order), never through
// the engine thread's event loop, which is told only that the request has settled here.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { Frame } from '../model/types.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { InlineFrameDecoder, splitFrames, type TerminalEvent } from './frame-decoder.ts';
import { loadEngineCodec, type RuntimeSpec } from './load-runtime.ts';
import type { EngineEvent } from './protocol.ts';
import { transferList } from './transfer-list.ts';

export type DecodeCommand =
  | { readonly type: 'open'; readonly id: number }
  | { readonly type: 'decode'; readonly id: number; readonly codes: Int32Array }
  | { readonly type: 'end'; readonly event: TerminalEvent }
  | { readonly type: 'drop'; readonly id: number }
  | { readonly type: 'close' };

/** To the engine thread: the codec's load, and each request whose terminal event this thread has sent. */
export type DecodeReply =
  | { readonly type: 'decoder-ready' }
  | { readonly type: 'decoder-failed'; readonly error: ReturnType<typeof serializeError> }
  | { readonly type: 'settled'; readonly id: number };

const port = parentPort!;
const { spec, audio } = workerData as { spec: RuntimeSpec; audio: MessagePort };

function reply(message: DecodeReply): void {
  port.postMessage(message);
}

/** Audio and terminal events to the main thread; a terminal event also settles the request with the engine thread. */
function send(event: EngineEvent): void {
  audio.postMessage(event, transferList(event));
  if (event.type === 'finished' || event.type === 'failed') reply({ type: 'settled', id: event.id });
}

try {
  const decoder = new InlineFrameDecoder(await loadEngineCodec(spec), send);
  // Decode commands that arrive together are decoded together (one pass for every lane on a GPU codec); any other
  // command first flushes them, so per-request order holds.
  let queued: { id: number; frames: Frame[] }[] = [];
  const flush = () => {
    const groups = queued;
    queued = [];
    if (groups.length > 0) decoder.decodeMany(groups);
  };
  port.on('message', (command: DecodeCommand) => {
    if (command.type === 'decode') {
      if (queued.length === 0) setImmediate(flush);
      queued.push({ id: command.id, frames: splitFrames(command.codes) });
      return;
    }
    flush();
    if (command.type === 'open') decoder.open(command.id);
    else if (command.type === 'end') decoder.end(command.event);
    else if (command.type === 'drop') decoder.drop(command.id);
    else {
      audio.close();
      port.close();
    }
  });
  reply({ type: 'decoder-ready' });
} catch (error) {
  reply({ type: 'decoder-failed', error: serializeError(error) });
  port.close();
}
