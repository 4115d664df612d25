// The one place where errors become HTTP: DramaError kinds → statuses, and every 4xx/5xx body in OpenAI's envelope
// `{ error: { message, type, param, code } }`. Fastify's own errors (validation, JSON, content type, body size) are
// translated here too, so a client never sees another shape.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DramaError, type ErrorKind, isDramaError } from '../errors.ts';
import { recordOutcome } from './outcomes.ts';
import type { RouteMethods } from './route-methods.ts';

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  invalid_input: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  overloaded: 503,
  bad_checkpoint: 500,
  device: 500,
  internal: 500,
};

/** Codes whose status is not their kind's: HTTP has a more precise one for them. */
const STATUS_BY_CODE: Record<string, number> = {
  // The request is well formed but this server's memory cannot hold it: a lane's, the allocator's cap, the device.
  MEMORY_BUDGET_EXCEEDED: 503,
  ALLOCATION_LIMIT_EXCEEDED: 503,
  CUDA_ERROR_OUT_OF_MEMORY: 503,
  UNSUPPORTED_CONTENT_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  PATH_PARAMETER_TOO_LONG: 414,
  REQUEST_TIMEOUT: 408,
  BODY_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
};

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  408: 'invalid_request_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  414: 'invalid_request_error',
  415: 'invalid_request_error',
  431: 'invalid_request_error',
  503: 'server_overloaded',
};

/** Seconds a client is asked to wait after a 503. */
const RETRY_AFTER_SECONDS = 1;

export interface ErrorEnvelope {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string;
  };
}

export function statusOf(error: DramaError): number {
  return STATUS_BY_CODE[error.code] ?? STATUS_BY_KIND[error.kind];
}

export function envelope(status: number, error: DramaError): ErrorEnvelope {
  const type = TYPE_BY_STATUS[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  return { error: { message: error.message, type, param: error.param ?? null, code: error.code } };
}

interface AjvError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly message?: string;
  readonly params: Record<string, unknown>;
}

/** `/references/0/audio` → `references[0].audio`. */
function fieldName(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '')
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('');
}

function fromValidation(errors: readonly AjvError[]): DramaError {
  // Inside a union the branch errors come first: an unknown or missing field is the most useful of them.
  const first =
    errors.find((error) => error.keyword === 'additionalProperties') ??
    errors.find((error) => error.keyword === 'required') ??
    errors[0]!;
  const parent = fieldName(first.instancePath);
  if (first.keyword === 'additionalProperties') {
    const name = String(first.params.additionalProperty);
    const field = parent === '' ? name : `${parent}.${name}`;
    return new DramaError('UNKNOWN_FIELD', `unknown field '${field}'`, { param: field });
  }
  if (first.keyword === 'required') {
    const name = String(first.params.missingProperty);
    const field = parent === '' ? name : `${parent}.${name}`;
    return new DramaError('MISSING_FIELD', `missing required field '${field}'`, { param: field });
  }
  const field = parent === '' ? 'body' : parent;
  const allowed = errors.filter((error) => error.keyword === 'const' && error.instancePath === first.instancePath);
  if (allowed.length > 0 && errors.some((error) => error.keyword === 'anyOf')) {
    const values = allowed.map((error) => JSON.stringify(error.params.allowedValue)).join(', ');
    return new DramaError('INVALID_FIELD', `'${field}' must be one of ${values}`, { param: field });
  }
  return new DramaError('INVALID_FIELD', `'${field}' ${first.message ?? 'is invalid'}`, { param: field });
}

/** Any thrown value → a DramaError with the right kind. */
export function toDramaError(error: unknown): DramaError {
  if (isDramaError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { validation?: AjvError[] };
  if (Array.isArray(fastifyError.validation) && fastifyError.validation.length > 0) {
    return fromValidation(fastifyError.validation);
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DramaError('MALFORMED_JSON', `the body is not valid JSON: ${fastifyError.message}`, { param: 'body' });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DramaError('BODY_TOO_LARGE', fastifyError.message ?? 'the body is too large', { kind: 'too_large' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DramaError('UNSUPPORTED_CONTENT_TYPE', fastifyError.message ?? 'unsupported content type');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DramaError('INVALID_CONTENT_LENGTH', fastifyError.message ?? 'invalid content length');
    case 'FST_ERR_BAD_URL':
      return new DramaError('INVALID_URL_ENCODING', `the path is not valid URL encoding: ${fastifyError.message}`, {
        param: 'path',
      });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new DramaError('PATH_PARAMETER_TOO_LONG', `a path parameter is too long: ${fastifyError.message}`, {
        param: 'path',
      });
  }
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new DramaError(fastifyError.code ?? 'BAD_REQUEST', fastifyError.message ?? 'bad request');
  }
  const message = error instanceof Error ? error.message : String(error);
  return new DramaError('INTERNAL_ERROR', `internal error: ${message}`, { kind: 'internal', cause: error });
}

/** 503s that waiting cannot mend (the request is larger than a lane will ever hold): no Retry-After. */
const NEVER_FITS = new Set(['MEMORY_BUDGET_EXCEEDED']);

/** The headers an error reply carries besides its body: when to retry a 503, how to authenticate after a 401. */
export function errorHeaders(status: number, code?: string): Record<string, string> {
  if (status === 503)
    return code !== undefined && NEVER_FITS.has(code) ? {} : { 'Retry-After': String(RETRY_AFTER_SECONDS) };
  if (status === 401) return { 'WWW-Authenticate': 'Bearer' };
  return {};
}

/** Sends the envelope, and records its code for the request counter. */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const dramaError = toDramaError(error);
  const status = statusOf(dramaError);
  recordOutcome(reply, { status, code: dramaError.code });
  return reply
    .code(status)
    .headers(errorHeaders(status, dramaError.code))
    .type('application/json')
    .send(envelope(status, dramaError));
}

/** The body types a client may send: those the route's schema names, else those its parsers take. */
const BODY_TYPES = ['application/json', 'application/msgpack', 'multipart/form-data'];

/** Names the type sent and the types the route takes, where fastify says only "Unsupported Media Type". */
function mediaTypeError(request: FastifyRequest): DramaError {
  const sent = request.headers['content-type'];
  const consumes = (request.routeOptions?.schema as { consumes?: readonly string[] } | undefined)?.consumes;
  const accepted = consumes ?? BODY_TYPES.filter((type) => request.server.hasContentTypeParser(type));
  const path = request.url.split('?', 1)[0];
  return new DramaError(
    'UNSUPPORTED_CONTENT_TYPE',
    `${sent === undefined ? 'a body without a content type' : `content type '${sent}'`} is not accepted on ${path}; send ${accepted.join(' or ')}`,
    { param: 'content-type' },
  );
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if ((error as Partial<FastifyError>).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') error = mediaTypeError(request);
  const dramaError = toDramaError(error);
  if (statusOf(dramaError) >= 500 && dramaError.kind !== 'overloaded')
    request.log.error({ err: error }, dramaError.message);
  return sendError(reply, error);
}

/** 405 with the methods allowed when another method has the path, else 404. */
export function notFoundHandler(routes: RouteMethods) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const allowed = routes.allowed(request.url);
    if (allowed.length === 0) {
      const error = new DramaError('ROUTE_NOT_FOUND', `no route ${request.method} ${request.url}`, {
        kind: 'not_found',
      });
      return sendError(reply, error);
    }
    const message = `${request.method} is not allowed on ${request.url.split('?', 1)[0]}; use ${allowed.join(', ')}`;
    reply.header('Allow', allowed.join(', '));
    return sendError(reply, new DramaError('METHOD_NOT_ALLOWED', message));
  };
}
