// Entry of the decode thread: the codec beside the engine thread, so that decoding a request's frames overlaps the
// next frame rounds. Commands and events keep per-request order; frames arrive as one [N, K] int32 array.
import { parentPort, workerData } from 'node:worker_threads';
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

export type DecodeReply =
  | EngineEvent
  | { readonly type: 'decoder-ready' }
  | { readonly type: 'decoder-failed'; readonly error: ReturnType<typeof serializeError> };

const port = parentPort!;
const { spec } = workerData as { spec: RuntimeSpec };

function send(event: DecodeReply): void {
  port.postMessage(event, transferList(event));
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
    else port.close();
  });
  send({ type: 'decoder-ready' });
} catch (error) {
  send({ type: 'decoder-failed', error: serializeError(error) });
  port.close();
}
