// The server's request trace (src/server/request-trace.ts) as a serve bench reads it: each event's time by request
// id, and where a request's first audio went, stage by stage, from the moment it arrived.
import type { RequestTrace } from '../../src/server/request-trace.ts';
import { percentile, type SpeechSample } from './speech-client.ts';

/** Milliseconds from arrival to each stage (p50 over the requests), and to the client's first audio bytes. */
export interface FirstAudioStages {
  readonly handler: number;
  readonly submitted: number;
  readonly admitted: number;
  readonly engineAudio: number;
  readonly clientAudio: number;
}

/** The stages in order, with their column labels. */
export const FIRST_AUDIO_STAGES: readonly [keyof FirstAudioStages, string][] = [
  ['handler', 'body read, handler runs'],
  ['submitted', 'submitted to the engine'],
  ['admitted', 'admitted (prompt built)'],
  ['engineAudio', 'first audio event'],
  ['clientAudio', 'client has audio (from its send)'],
];

/** Which trace event ends each stage (the first event of the request whose text starts so). */
const STAGE_EVENTS: Record<Exclude<keyof FirstAudioStages, 'clientAudio'>, string> = {
  handler: 'preHandler',
  submitted: 'submitted',
  admitted: 'engine admitted',
  engineAudio: 'engine audio',
};

export class ServerTrace {
  private readonly events = new Map<string, [string, number][]>();

  readonly record: RequestTrace = (requestId, event) => {
    const list = this.events.get(requestId) ?? [];
    list.push([event, performance.now()]);
    this.events.set(requestId, list);
  };

  /** p50 of each stage over the requests `ids`; the client's first audio is placed by its own duration. */
  stages(ids: readonly string[], samples: readonly SpeechSample[]): FirstAudioStages {
    const at = (id: string, prefix: string): number => {
      const list = this.events.get(id) ?? [];
      const arrived = list.find(([event]) => event === 'arrived')?.[1] ?? Number.NaN;
      const found = list.find(([event]) => event.startsWith(prefix))?.[1] ?? Number.NaN;
      return found - arrived;
    };
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        0.5,
      );
    const stage = (prefix: string) => median(ids.map((id) => at(id, prefix)));
    return {
      handler: stage(STAGE_EVENTS.handler),
      submitted: stage(STAGE_EVENTS.submitted),
      admitted: stage(STAGE_EVENTS.admitted),
      engineAudio: stage(STAGE_EVENTS.engineAudio),
      clientAudio: median(samples.map((sample) => sample.firstAudioMs)),
    };
  }
}
