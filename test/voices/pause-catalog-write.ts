// Loaded into a `drama3 serve` process with --import by the durability test: when PAUSE_CATALOG_WRITE is set
// ({"operation": "open" | "rename" | "rm", "path": regular expression}), the first matching node:fs/promises call
// prints "catalog write paused before OPERATION PATH" on stdout and never returns, so the test can SIGKILL the
// server at exactly that step instead of guessing when a write is under way.
import { writeSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const spec = process.env.PAUSE_CATALOG_WRITE;
if (spec !== undefined && spec !== '') {
  const { operation, path } = JSON.parse(spec) as { operation: 'open' | 'rename' | 'rm'; path: string };
  const pattern = new RegExp(path);
  const promises = createRequire(import.meta.url)('node:fs/promises') as Record<
    string,
    (...args: unknown[]) => Promise<unknown>
  >;
  const original = promises[operation]!;
  let paused = false;
  promises[operation] = (...args: unknown[]) => {
    if (paused || typeof args[0] !== 'string' || !pattern.test(args[0])) return original(...args);
    paused = true;
    writeSync(1, `catalog write paused before ${operation} ${args[0]}\n`);
    return new Promise(() => {});
  };
  // The catalog imports node:fs/promises as an ES module: carry the patched function into its live bindings.
  syncBuiltinESMExports();
}
