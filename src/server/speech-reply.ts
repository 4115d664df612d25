// One speech request from admission to the last byte, in one of three shapes: the whole file; a chunked audio stream
// whose finish reason is an HTTP trailer; or server-sent events. Errors before the first byte are ordinary error
// replies; a chunked stream that fails later is cut off without its terminating chunk, so it never looks complete.
// A reply that ends any other way than its engine's `finished` aborts its audio output, freeing the encoder. A client
// that hung up at any point before submission is never submitted; one that hangs up later cancels. A streamed reply
// whose client does not read is cut off once its unsent bytes pass a bound, instead of buffering every frame.
import type { FastifyReply } from 'fastify';
import type { RequestEvent, RequestHandle } from '../engine/engine.ts';
import type { SpeechJob } from '../engine/protocol.ts';
import { DramaError } from '../errors.ts';
import { deserializeError } from '../threads/serialize-error.ts';
import { type AudioOutput, completeWholeFile, openAudioOutput } from './audio-output.ts';
import type { ServerContext } from './context.ts';
import { envelope, sendError, statusOf } from './errors.ts';
import { CLIENT_CLOSED_STATUS, clientGone, onClientGone, recordOutcome } from './outcomes.ts';
import { traceReply } from './request-trace.ts';
import type { SpeechFormat } from './schemas.ts';

export type ReplyMode = 'whole' | 'audio' | 'sse';

export interface SpeechPlan {
  readonly route: string;
  readonly job: SpeechJob;
  readonly format: SpeechFormat;
  readonly sampleRate: number;
  readonly mode: ReplyMode;
  /** Engine and text-module field names → this route's field names (the text to speak is `input` or `text`). */
  readonly fieldNames: Readonly<Record<string, string>>;
  /** Encoder bit rate in bit/s; undefined: the format's default. */
  readonly bitrate?: number;
  /** Playback speed with the pitch kept (1: untouched). */
  readonly speed?: number;
  /** Gain in dB (0: untouched). */
  readonly volumeDb?: number;
  /** Fields accepted for client compatibility that do not change the audio: named in X-Ignored-Fields. */
  readonly ignoredFields?: readonly string[];
}

/** Unsent bytes a streamed reply may hold for a client that does not read (many seconds of any format). */
export const DEFAULT_MAX_BUFFERED_REPLY_BYTES = 8 * 1024 * 1024;
/** Bytes a reply that is not streamed may hold until its end (about 25 minutes of 44.1 kHz 16-bit PCM). */
export const DEFAULT_MAX_HELD_REPLY_BYTES = 256 * 1024 * 1024;

/** A reply held whole (or by an encoder that cannot stream) past its bound: refused, naming how to get it. */
function tooLargeToHold(format: SpeechFormat, held: number, frames: number, limit: number): DramaError {
  return new DramaError(
    'REPLY_TOO_LARGE_TO_HOLD',
    `a ${format} reply held until its end reached ${held} bytes after ${frames} frames, over the limit of ${limit}: ` +
      'stream it (stream_format "audio" or "sse") or ask for fewer frames',
    { kind: 'too_large', param: 'max_frames' },
  );
}

function sseEvent(payload: object): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** Resolves once the reply is sent, cut off or abandoned by the client. */
export async function replySpeech(context: ServerContext, reply: FastifyReply, plan: SpeechPlan): Promise<void> {
  const engine = context.engine();
  const trace = (event: string) => traceReply(context.trace, reply, event);
  trace(`planned ${plan.route} ${plan.format} ${plan.mode}`);
  if (clientGone(reply)) return abandon(reply);
  const output = await openAudioOutput(context.audio, engine.info.sampleRate, plan);
  trace('output opened');
  const arrived = performance.now();
  const raw = reply.raw;
  const pieces: Uint8Array[] = [];
  let started = false;
  let firstAudio = true;
  let inputTokens = 0;
  // What the reply holds until its end: the whole file's bytes, and the PCM an encoder that cannot stream keeps.
  let heldBytes = 0;
  let heldFrames = 0;

  const headers = (): Record<string, string> => ({
    'X-Input-Tokens': String(inputTokens),
    'X-Sample-Rate': String(output.sampleRate),
    'X-Seed': String(plan.job.sampling.seed),
    ...(plan.ignoredFields !== undefined && plan.ignoredFields.length > 0
      ? { 'X-Ignored-Fields': plan.ignoredFields.join(', ') }
      : {}),
  });
  /** Writes the next bytes; false when the client has left more unsent than the bound allows. */
  const write = (bytes: Uint8Array): boolean => {
    if (bytes.length === 0) return true;
    if (firstAudio) {
      firstAudio = false;
      context.metrics.timeToFirstAudio.observe({ route: plan.route }, (performance.now() - arrived) / 1000);
    }
    if (plan.mode === 'sse')
      raw.write(sseEvent({ type: 'speech.audio.delta', audio: Buffer.from(bytes).toString('base64') }));
    else if (plan.mode === 'audio') raw.write(bytes);
    else pieces.push(bytes);
    return raw.writableLength <= context.maxBufferedReplyBytes;
  };

  return new Promise<void>((resolve) => {
    let handle: RequestHandle;
    // Once the reply is settled (a failure in this thread cancels the request), later engine events are ignored.
    let settled = false;
    const settle = () => {
      trace('settled');
      settled = true;
      resolve();
    };
    const onEvent = (event: RequestEvent) => {
      trace(`engine ${event.type}${settled ? ' (after settling)' : ''}`);
      if (settled) return;
      try {
        switch (event.type) {
          case 'admitted':
            inputTokens = event.admission.inputTokens;
            if (plan.mode !== 'whole') startStream(raw, reply, plan.mode, output, headers());
            started = plan.mode !== 'whole';
            return;
          case 'audio': {
            context.metrics.framesGenerated.inc(event.frames);
            const bytes = output.push(event.pcm);
            heldBytes += (plan.mode === 'whole' ? bytes.length : 0) + (output.streamable ? 0 : event.pcm.byteLength);
            heldFrames += event.frames;
            if (heldBytes > context.maxHeldReplyBytes) {
              throw tooLargeToHold(plan.format, heldBytes, heldFrames, context.maxHeldReplyBytes);
            }
            if (!write(bytes)) cutOff();
            return;
          }
          case 'finished':
            // The encoder's last bytes may come from another thread: awaited, so that other replies keep moving.
            output
              .finish()
              .then((last) => complete(event, last))
              .catch((error: unknown) => {
                if (!settled) fail(error);
              });
            return;
          case 'failed':
            fail(deserializeError(event.error));
            return;
          case 'cancelled':
            // The client is gone: nothing more will be sent, and fastify must not wait for a reply.
            if (!started) reply.hijack();
            raw.destroy();
            output.abort();
            settle();
            return;
        }
      } catch (error) {
        handle.cancel();
        fail(error);
      }
    };

    const complete = (event: Extract<RequestEvent, { type: 'finished' }>, last: Uint8Array) => {
      if (settled) return;
      if (clientGone(reply)) {
        // Gone while the last bytes were encoded: there is no one to send them to.
        if (!started) reply.hijack();
        raw.destroy();
        settle();
        return;
      }
      write(last);
      const usage = event.usage;
      const finish = { 'X-Finish-Reason': event.reason, 'X-Output-Frames': String(usage.outputFrames) };
      if (plan.mode === 'whole') {
        void reply
          .code(200)
          .headers({ ...headers(), ...finish, 'Content-Type': output.contentType })
          .send(completeWholeFile(plan.format, Buffer.concat(pieces)));
      } else if (plan.mode === 'audio') {
        raw.addTrailers(finish);
        raw.end();
      } else {
        const tokens = { input_tokens: usage.inputTokens, output_tokens: usage.outputFrames };
        const done = {
          type: 'speech.audio.done',
          usage: { ...tokens, total_tokens: usage.inputTokens + usage.outputFrames },
          finish_reason: event.reason,
        };
        raw.end(sseEvent(done));
      }
      settle();
    };

    const fail = (error: unknown) => {
      output.abort();
      const dramaError = inRouteTerms(error, plan.fieldNames);
      const status = statusOf(dramaError);
      if (!started) void sendError(reply, dramaError);
      else {
        recordOutcome(reply, { status: 500, code: dramaError.code });
        if (plan.mode === 'sse') raw.end(sseEvent({ type: 'speech.audio.error', ...envelope(status, dramaError) }));
        else raw.destroy(dramaError);
      }
      settle();
    };

    // The client does not read: its request is cancelled and the reply cut off, named in the request counter.
    const cutOff = () => {
      recordOutcome(reply, { status: CLIENT_CLOSED_STATUS, code: 'CLIENT_NOT_READING' });
      handle.cancel();
      output.abort();
      raw.destroy();
      settle();
    };

    // A hang-up before this point (while the body, voice or references were read) was caught above; from here on
    // the watch that started with the request reports it, even one that happened a moment ago.
    try {
      handle = context.engine().submit(plan.job, onEvent);
      trace(`submitted as engine request ${handle.id}`);
    } catch (error) {
      // Refused at admission (overloaded, restarting): the reply ends here, as an error reply.
      output.abort();
      throw error;
    }
    // The encoder is freed at once; the lane at the engine's next round.
    onClientGone(reply, () => {
      trace('client gone: cancelling');
      handle.cancel();
      output.abort();
    });
  });
}

/** The client left before its request was submitted: nothing is generated, and fastify does not wait for a reply. */
function abandon(reply: FastifyReply): void {
  reply.hijack();
  reply.raw.destroy();
}

function startStream(
  raw: FastifyReply['raw'],
  reply: FastifyReply,
  mode: 'audio' | 'sse',
  output: AudioOutput,
  headers: Record<string, string>,
): void {
  reply.hijack();
  if (mode === 'sse') {
    raw.writeHead(200, { ...headers, 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  } else {
    raw.writeHead(200, { ...headers, 'Content-Type': output.contentType, Trailer: 'X-Finish-Reason, X-Output-Frames' });
  }
  raw.flushHeaders();
}

/** The error with its `param` renamed to the route's field name. */
function inRouteTerms(error: unknown, fieldNames: Readonly<Record<string, string>>): DramaError {
  if (!(error instanceof DramaError)) return new DramaError('REPLY_FAILED', String(error), { kind: 'internal' });
  const param = error.param === undefined ? undefined : (fieldNames[error.param] ?? error.param);
  if (param === error.param) return error;
  return new DramaError(error.code, error.message, { kind: error.kind, param, cause: error });
}
