// What the kernel build knows about its files, without running it (importing scripts/build-kernels.ts from a
// bundled test would start a build): the .cu sources, the headers each includes, which fatbins are stale, and
// ptxas's report read into one line per kernel.
import fs from 'node:fs';
import path from 'node:path';

const sourceFolders = ['kernels/cuda', 'kernels/controls'];

export interface KernelReport {
  readonly name: string;
  readonly registers: number;
  readonly sharedBytes: number;
  readonly stackBytes: number;
  readonly spillBytes: number;
}

/** Reads ptxas -v output (the sm_90a pass) into one line per entry function. */
export function parsePtxasReport(text: string): KernelReport[] {
  const reports: KernelReport[] = [];
  let current: { name: string; stackBytes: number; spillBytes: number } | undefined;
  for (const line of text.split('\n')) {
    const entry = /Compiling entry function '([^']+)' for 'sm_90a'/.exec(line);
    if (entry) current = { name: entry[1]!, stackBytes: 0, spillBytes: 0 };
    const frame = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (frame && current) {
      current.stackBytes = Number(frame[1]);
      current.spillBytes = Number(frame[2]) + Number(frame[3]);
    }
    const used = /Used (\d+) registers(?:.*?, (\d+) bytes smem)?/.exec(line);
    if (used && current) {
      reports.push({ ...current, registers: Number(used[1]), sharedBytes: Number(used[2] ?? 0) });
      current = undefined;
    }
  }
  return reports;
}

/** The .cu sources the build compiles, as absolute paths. */
export function kernelSources(base: string): string[] {
  return sourceFolders.flatMap((folder) =>
    fs
      .readdirSync(path.join(base, folder))
      .filter((file) => file.endsWith('.cu'))
      .sort()
      .map((file) => path.join(base, folder, file)),
  );
}

/** A source and every header it includes with quotes, found beside it or in kernels/cuda (as nvcc's -I finds them). */
function withHeaders(source: string, base: string, found = new Set<string>()): Set<string> {
  if (found.has(source)) return found;
  found.add(source);
  const text = fs.readFileSync(source, 'utf8');
  for (const match of text.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
    const candidates = [path.join(path.dirname(source), match[1]!), path.join(base, 'kernels/cuda', match[1]!)];
    const header = candidates.find((candidate) => fs.existsSync(candidate));
    if (header) withHeaders(header, base, found);
  }
  return found;
}

/** Why the fatbin of `source` in `outputs` must be rebuilt (missing, or older than the source or a header), if it must. */
export function staleReasons(source: string, base: string, outputs: string): string[] {
  const name = path.basename(source, '.cu');
  const fatbin = path.join(outputs, `${name}.fatbin`);
  if (!fs.existsSync(fatbin)) return [`${name}.fatbin is missing (source ${path.relative(base, source)})`];
  const built = fs.statSync(fatbin).mtimeMs;
  return [...withHeaders(source, base)]
    .filter((file) => fs.statSync(file).mtimeMs > built)
    .map((file) => `${name}.fatbin is older than ${path.relative(base, file)}`);
}

/**
 * Fatbins in `outputs` that are missing or older than their .cu source or a header it includes, one line each:
 * what `npm run build:kernels` would change.
 */
export function staleKernels(base: string, outputs: string = path.join(base, 'build/kernels')): string[] {
  return kernelSources(base).flatMap((source) => staleReasons(source, base, outputs));
}
