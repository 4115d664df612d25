// What every route shares: the engine (absent while the model loads), the audio toolkit, metrics and voices.

import type { Engine } from '../engine/engine.ts';
import { DramaError } from '../errors.ts';
import type { VoiceEncoder } from '../voices/encoder.ts';
import type { VoiceResolver } from '../voices/resolver.ts';
import type { AudioToolkit } from './audio-output.ts';
import type { ServerMetrics } from './metrics.ts';
import type { RequestTrace } from './request-trace.ts';

export interface ServerContext {
  /** The ready engine; throws MODEL_LOADING (503) while it starts. */
  engine(): Engine;
  readonly audio: AudioToolkit;
  readonly metrics: ServerMetrics;
  readonly resolveVoice: VoiceResolver;
  /** Reference audio → frames off the engine thread; absent: one-off references are refused. */
  readonly referenceEncoder: VoiceEncoder | undefined;
  /** Bytes a streamed reply may have waiting for its client before it is cut off. */
  readonly maxBufferedReplyBytes: number;
  /** Bytes a reply that is not streamed (or whose encoder cannot stream) may hold before it is refused. */
  readonly maxHeldReplyBytes: number;
  /** Lifecycle events of each request, for diagnosis; absent: nothing is recorded. */
  readonly trace: RequestTrace | undefined;
}

export function engineSlot(): { get: () => Engine; set: (engine: Engine) => void; current: () => Engine | undefined } {
  let engine: Engine | undefined;
  return {
    get: () => {
      if (engine === undefined) {
        throw new DramaError('MODEL_LOADING', 'the model is still loading; retry shortly', { kind: 'overloaded' });
      }
      return engine;
    },
    set: (ready) => {
      engine = ready;
    },
    current: () => engine,
  };
}
