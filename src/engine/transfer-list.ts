// What the engine's threads hand over rather than copy when they post an event.
import type { EngineEvent } from './protocol.ts';

/** The buffers a message hands over instead of copying: an audio event's PCM and codes. */
export function transferList(event: EngineEvent | { readonly type: `decoder-${string}` }): ArrayBuffer[] {
  return event.type === 'audio' ? [event.pcm.buffer as ArrayBuffer, event.codes.buffer as ArrayBuffer] : [];
}
