// Optional API keys: when any are configured, every route but /health and / needs `Authorization: Bearer <key>`.
// Keys are compared in constant time.
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import { DramaError } from '../errors.ts';

const OPEN_PATHS = new Set(['/', '/health']);

/** Keys from `--api-key` and from `--api-key-file` (one key a line; blank lines and # comments skipped). */
export function loadApiKeys(keys: readonly string[], file: string | undefined): string[] {
  const fromFile =
    file === undefined
      ? []
      : readFileSync(file, 'utf8')
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '' && !line.startsWith('#'));
  return [...keys, ...fromFile];
}

function matches(given: string, keys: readonly Buffer[]): boolean {
  const candidate = Buffer.from(given);
  let found = false;
  for (const key of keys) if (key.length === candidate.length && timingSafeEqual(key, candidate)) found = true;
  return found;
}

export function apiKeyCheck(keys: readonly string[]): (request: FastifyRequest) => Promise<void> {
  const buffers = keys.map((key) => Buffer.from(key));
  return async (request) => {
    if (buffers.length === 0 || OPEN_PATHS.has(request.url.split('?')[0]!)) return;
    const header = request.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
    if (!matches(token, buffers)) {
      const message = token === '' ? 'missing API key: send Authorization: Bearer <key>' : 'invalid API key';
      throw new DramaError('INVALID_API_KEY', message, { kind: 'unauthorized' });
    }
  };
}
