// How long a client may take to send its request. The request timeout (headers and body together) is Node's own,
// answered through the client error path; the body timeout is ours: a body still arriving after it is cut off with
// BODY_TIMEOUT (408), so a client dribbling its body cannot hold a connection for minutes.
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DramaError } from '../errors.ts';

export interface RequestTimeouts {
  /** Most milliseconds from the start of a request to the end of its body (0: no limit). */
  readonly requestMs: number;
  /** Most milliseconds from the end of the headers to the end of the body (0: no limit). */
  readonly bodyMs: number;
}

export const DEFAULT_TIMEOUTS: RequestTimeouts = { requestMs: 120_000, bodyMs: 30_000 };

/** Node's own limits: the headers within the request timeout, checked often enough to hold within a fraction of it. */
export function serverTimeouts(timeouts: RequestTimeouts): {
  headersTimeout: number;
  connectionsCheckingInterval: number;
} {
  const { requestMs } = timeouts;
  return {
    headersTimeout: requestMs > 0 ? Math.min(60_000, requestMs) : 60_000,
    connectionsCheckingInterval: requestMs > 0 ? Math.max(50, Math.min(30_000, Math.floor(requestMs / 4))) : 30_000,
  };
}

function bodyTimeout(bodyMs: number): DramaError {
  return new DramaError('BODY_TIMEOUT', `the request body did not arrive within ${bodyMs} ms`, { param: 'body' });
}

/** Multipart bodies are read by the route itself from the raw request: when each must be read by, and its limit. */
const multipartDeadlines = new WeakMap<FastifyRequest, { readonly at: number; readonly bodyMs: number }>();

/** `reading` (a multipart body being read), failed with BODY_TIMEOUT if the body is still arriving at its deadline. */
export async function withinBodyTimeout<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  reading: Promise<T>,
): Promise<T> {
  const deadline = multipartDeadlines.get(request);
  if (deadline === undefined) return reading;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => {
        void reply.header('Connection', 'close');
        reject(bodyTimeout(deadline.bodyMs));
      },
      Math.max(0, deadline.at - Date.now()),
    );
  });
  reading.catch(() => {});
  try {
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A preParsing hook: the body reaches its parser through a stream that fails with BODY_TIMEOUT when it is late. */
export function bodyTimeoutHook(
  bodyMs: number,
): (request: FastifyRequest, reply: FastifyReply, payload: Readable) => Promise<Readable> {
  return async (request, reply, payload) => {
    if (bodyMs <= 0) return payload;
    if (/^multipart\//i.test(request.headers['content-type'] ?? '')) {
      multipartDeadlines.set(request, { at: Date.now() + bodyMs, bodyMs });
      return payload;
    }
    const body = new PassThrough();
    const timer = setTimeout(() => {
      // The rest of a late body is not read, so the connection closes after the reply.
      void reply.header('Connection', 'close');
      payload.unpipe(body);
      payload.pause();
      body.destroy(bodyTimeout(bodyMs));
    }, bodyMs);
    timer.unref();
    payload.once('end', () => clearTimeout(timer));
    payload.once('close', () => clearTimeout(timer));
    payload.once('error', (error) => body.destroy(error));
    // A body refused unread (415) has no reader listening: a client gone mid-body must not become an uncaught error.
    body.on('error', () => {});
    payload.pipe(body);
    return body;
  };
}
