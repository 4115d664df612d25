// How synthesis stops on an AbortSignal: checked between tensors, and raced against a tensor a thread is drawing.
import { DramaError } from '../errors.ts';

function cancelled(): DramaError {
  return new DramaError('SYNTH_CANCELLED', 'writing the synthetic checkpoint was cancelled', { kind: 'internal' });
}

export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw cancelled();
}

/** `work`, or SYNTH_CANCELLED as soon as `signal` aborts (the work itself is stopped by whoever started it). */
export async function unlessCancelled<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  throwIfCancelled(signal);
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
