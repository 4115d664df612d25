// Every refusal in drama3 is a DramaError with a stable `code`; the server maps codes to HTTP statuses in one place.

export type ErrorKind =
  | 'invalid_input' // the caller sent something we refuse (HTTP 400)
  | 'not_found' // a named thing does not exist (404)
  | 'conflict' // a named thing already exists (409)
  | 'too_large' // a body or file over its limit (413)
  | 'unauthorized' // missing or wrong API key (401)
  | 'overloaded' // admission is full (503 with Retry-After)
  | 'bad_checkpoint' // a checkpoint, config or weight file we cannot use
  | 'device' // a GPU or driver failure
  | 'internal'; // a bug

export class DramaError extends Error {
  readonly code: string;
  readonly kind: ErrorKind;
  /** The request field or config path the error is about, when there is one. */
  readonly param: string | undefined;

  constructor(code: string, message: string, options: { kind?: ErrorKind; param?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DramaError';
    this.code = code;
    this.kind = options.kind ?? 'invalid_input';
    this.param = options.param;
  }
}

export function isDramaError(value: unknown): value is DramaError {
  return value instanceof DramaError;
}
