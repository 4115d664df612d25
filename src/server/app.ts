// buildApp: the fastify instance with every route, the error envelope, optional API keys and metrics. The engine may
// still be loading when the app starts listening (routes answer 503 until it is ready); it is closed with the app.
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Engine } from '../engine/engine.ts';
import type { VoiceEncoder } from '../voices/encoder.ts';
import { defaultVoiceOnly, type VoiceResolver } from '../voices/resolver.ts';
import type { AudioToolkit } from './audio-output.ts';
import { apiKeyCheck } from './auth.ts';
import { clientErrorHandler } from './client-errors.ts';
import { engineSlot, type ServerContext } from './context.ts';
import { errorHandler, notFoundHandler } from './errors.ts';
import { createMetrics, routeName } from './metrics.ts';
import { watchReply } from './outcomes.ts';
import { REQUEST_ID_HEADER, type RequestTrace, traceReply } from './request-trace.ts';
import { routeMethods } from './route-methods.ts';
import { operationsRoutes } from './routes/operations.ts';
import { speechRoute } from './routes/speech.ts';
import { ttsRoute } from './routes/tts.ts';
import { type VoicesOptions, voicesRoutes } from './routes/voices.ts';
import { DEFAULT_MAX_BUFFERED_REPLY_BYTES, DEFAULT_MAX_HELD_REPLY_BYTES } from './speech-reply.ts';
import { bodyTimeoutHook, DEFAULT_TIMEOUTS, type RequestTimeouts, serverTimeouts } from './timeouts.ts';

export interface AppOptions {
  /** The engine, or its start-up (the app serves 503 until it resolves). */
  readonly engine: Engine | Promise<Engine>;
  readonly audio: AudioToolkit;
  readonly apiKeys?: readonly string[];
  readonly resolveVoice?: VoiceResolver;
  /** Reference audio → frames off the engine thread (one-off references); without it references are refused. */
  readonly referenceEncoder?: VoiceEncoder;
  /** The voice catalog and its upload encoder (the voices routes answer 404 VOICES_DISABLED without it). */
  readonly voices?: VoicesOptions;
  /** The playground page; a placeholder is served when absent or unreadable. */
  readonly pagePath?: URL;
  /** Largest request body in bytes (references travel base64 in JSON). */
  readonly bodyLimit?: number;
  /** Request and body timeouts in milliseconds. */
  readonly timeouts?: RequestTimeouts;
  /** Bytes a streamed reply may have waiting for a client that does not read; past them it is cut off. */
  readonly maxBufferedReplyBytes?: number;
  /** Bytes a reply that is not streamed may hold until its end; past them it is refused (413). */
  readonly maxHeldReplyBytes?: number;
  readonly logger?: boolean;
  /** Node process metrics in /metrics (off in tests that build many apps). */
  readonly processMetrics?: boolean;
  /** Lifecycle events of each request (named by its X-Request-Id), for diagnosis. */
  readonly trace?: RequestTrace;
}

const DEFAULT_BODY_LIMIT = 32 * 1024 * 1024;

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  // Both are set once the metrics exist; fastify takes its error handlers at construction.
  let countClientError = (_code: string, _status: number) => {};
  let watch = (_request: FastifyRequest, _reply: FastifyReply) => {};
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    requestIdHeader: options.trace === undefined ? false : REQUEST_ID_HEADER,
    requestTimeout: timeouts.requestMs,
    http: serverTimeouts(timeouts),
    // Errors before any route runs (bad URL encoding, over-long parameters, broken HTTP) take the envelope too.
    frameworkErrors: (error, request, reply) => {
      watch(request, reply);
      return errorHandler(error, request, reply);
    },
    clientErrorHandler: clientErrorHandler((error, status) => countClientError(error.code, status)),
    // Wrong types and unknown fields are refused, never coerced or stripped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const slot = engineSlot();
  const engineReady = Promise.resolve(options.engine).then((engine) => {
    slot.set(engine);
    return engine;
  });
  engineReady.catch(() => {});
  app.addHook('onClose', async () => {
    const engine = slot.current();
    if (engine !== undefined) await engine.close();
  });

  const context: ServerContext = {
    engine: slot.get,
    audio: options.audio,
    metrics: createMetrics(() => slot.current()?.load, options.processMetrics ?? false),
    resolveVoice: options.resolveVoice ?? defaultVoiceOnly,
    referenceEncoder: options.referenceEncoder,
    maxBufferedReplyBytes: options.maxBufferedReplyBytes ?? DEFAULT_MAX_BUFFERED_REPLY_BYTES,
    maxHeldReplyBytes: options.maxHeldReplyBytes ?? DEFAULT_MAX_HELD_REPLY_BYTES,
    trace: options.trace,
  };
  countClientError = (code, status) => context.metrics.requests.inc({ route: 'unmatched', status, code });

  // Bodies are JSON (or msgpack on /v1/tts); plain text is refused with 415 rather than validated as a string.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler(errorHandler);
  const routes = routeMethods();
  app.addHook('onRoute', (route) => routes.add(route));
  app.setNotFoundHandler(notFoundHandler(routes));
  // First hook: every reply is counted once it closes, and a hang-up is seen from the moment the request arrives.
  watch = (request, reply) => {
    traceReply(options.trace, reply, 'arrived');
    watchReply(reply.raw, (status, code) => {
      traceReply(options.trace, reply, `closed ${status} ${code}`);
      context.metrics.requests.inc({ route: routeName(request.routeOptions?.url), status, code });
    });
  };
  app.addHook('onRequest', async (request, reply) => watch(request, reply));
  app.addHook('onRequest', apiKeyCheck(options.apiKeys ?? []));
  app.addHook('preParsing', bodyTimeoutHook(timeouts.bodyMs));
  const { trace } = options;
  if (trace !== undefined) {
    for (const stage of [
      'preParsing',
      'preValidation',
      'preHandler',
      'onSend',
      'onResponse',
      'onRequestAbort',
    ] as const)
      app.addHook(stage, async (request: FastifyRequest) => trace(String(request.id), stage));
  }
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'drama3',
        description: 'Drama 3 text-to-speech: OpenAI and Fish Speech compatible',
        version: '0.1.0',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });
  await app.register(speechRoute(context));
  await app.register(ttsRoute(context));
  await app.register(operationsRoutes(context, options.pagePath));
  await app.register(voicesRoutes(context, options.voices, engineReady));
  return app;
}
