// Errors as they cross a thread boundary: DramaError fields, anything else an ENGINE_FAILURE (a bug); and back.
import { DramaError, type ErrorKind, isDramaError } from '../errors.ts';

/** An error as it crosses the thread boundary (DramaError fields). */
export interface SerializedError {
  readonly code: string;
  readonly message: string;
  readonly kind: string;
  readonly param: string | undefined;
}

export function serializeError(error: unknown): SerializedError {
  if (isDramaError(error)) return { code: error.code, message: error.message, kind: error.kind, param: error.param };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'ENGINE_FAILURE', message, kind: 'internal', param: undefined };
}

/** The DramaError a serialized error stands for, on the receiving side. */
export function deserializeError(error: SerializedError): DramaError {
  return new DramaError(error.code, error.message, { kind: error.kind as ErrorKind, param: error.param });
}
