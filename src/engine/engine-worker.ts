// Entry of the engine's worker thread: loads the runtime named in workerData and starts the decode thread beside it
// (which loads the codec), then relays commands and events. The main thread's audio port goes on to the decode
// thread, which sends each request's audio and terminal event there itself (transferring the PCM, not copying it).
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { serializeError } from '../threads/serialize-error.ts';
import { EngineCore, type EngineSettings } from './engine-core.ts';
import { EarlyLanePlan } from './lane-plan.ts';
import { loadRuntime, type RuntimeSpec } from './load-runtime.ts';
import type { EngineCommand, EngineEvent } from './protocol.ts';
import { ThreadFrameDecoder } from './thread-decoder.ts';
import { transferList } from './transfer-list.ts';

const port = parentPort!;
const { spec, settings, audio } = workerData as { spec: RuntimeSpec; settings: EngineSettings; audio: MessagePort };

function send(event: EngineEvent): void {
  port.postMessage(event, transferList(event));
}

try {
  // Without its decode thread the engine cannot speak: it ends too, and the host starts both again.
  const decoderDied = () => setImmediate(() => process.exit(70));
  // The lanes are planned as soon as the model is loaded, beside the codec's and the tokenizer's loads; the codec is
  // loaded by the decode thread alone.
  const lanes = new EarlyLanePlan(settings);
  const decoderReady = ThreadFrameDecoder.start(spec, audio, send, decoderDied);
  const [runtime, decoder] = await Promise.all([
    loadRuntime(spec, { onModel: lanes.onModel, decodeThread: decoderReady }),
    decoderReady,
  ]);
  const core = new EngineCore(runtime, settings, send, decoder, lanes.take());
  port.on('message', (command: EngineCommand) => {
    core.handle(command);
    if (command.type === 'shutdown') port.close();
  });
  send({ type: 'ready', info: core.info });
} catch (error) {
  send({ type: 'load-failed', error: serializeError(error) });
  port.close();
}
