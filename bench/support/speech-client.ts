// One streaming speech request as a client sees it (time to the first audio bytes, time to the last, seconds of
// audio), and the percentile the serve benches report. Shared by bench/serve.ts and bench/gpu-serve.ts.

export interface SpeechSample {
  readonly firstAudioMs: number;
  readonly totalMs: number;
  readonly audioSeconds: number;
}

/** POSTs `body` to /v1/audio/speech as streamed 44.1 kHz pcm and reads the reply to its end. */
export async function streamSpeech(url: string, body: Record<string, unknown>): Promise<SpeechSample> {
  const started = performance.now();
  const reply = await fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ response_format: 'pcm', sample_rate: 44100, stream_format: 'audio', ...body }),
  });
  if (reply.status !== 200) throw new Error(`status ${reply.status}: ${await reply.text()}`);
  const reader = reply.body!.getReader();
  let firstAudioMs = Number.NaN;
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (bytes === 0) firstAudioMs = performance.now() - started;
    bytes += value.length;
  }
  return { firstAudioMs, totalMs: performance.now() - started, audioSeconds: bytes / 2 / 44100 };
}

/** The value at `fraction` of an ascending list (nearest rank). */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}
