// One streaming speech request as a client sees it (time to the first audio bytes, time to the last, seconds of
// audio, a digest of its bytes), and the percentile the serve benches report. Shared by bench/serve.ts and
// bench/gpu-serve.ts.
import { createHash } from 'node:crypto';

export interface SpeechSample {
  readonly firstAudioMs: number;
  readonly totalMs: number;
  readonly audioSeconds: number;
  /** sha256 of the reply's bytes, to compare a reply with the same request served another way. */
  readonly digest: string;
}

/** POSTs `body` to /v1/audio/speech as streamed 44.1 kHz pcm and reads the reply to its end (`requestId`: the
 *  X-Request-Id a traced server names its events by). */
export async function streamSpeech(
  url: string,
  body: Record<string, unknown>,
  requestId?: string,
): Promise<SpeechSample> {
  const started = performance.now();
  const reply = await fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(requestId === undefined ? {} : { 'x-request-id': requestId }) },
    body: JSON.stringify({ response_format: 'pcm', sample_rate: 44100, stream_format: 'audio', ...body }),
  });
  if (reply.status !== 200) throw new Error(`status ${reply.status}: ${await reply.text()}`);
  const reader = reply.body!.getReader();
  let firstAudioMs = Number.NaN;
  const hash = createHash('sha256');
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (bytes === 0) firstAudioMs = performance.now() - started;
    bytes += value.length;
    hash.update(value);
  }
  const totalMs = performance.now() - started;
  return { firstAudioMs, totalMs, audioSeconds: bytes / 2 / 44100, digest: hash.digest('hex') };
}

/** The value at `fraction` of an ascending list (nearest rank). */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}
