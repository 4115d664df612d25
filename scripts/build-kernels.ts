// npm run build:kernels: compiles every kernels/cuda/*.cu (and the contract's kernels/controls/*.cu) with nvcc to
// build/kernels/<name>.fatbin holding sm_90a SASS plus compute_80 PTX, saves ptxas's register / shared-memory /
// spill report beside each as <name>.ptxas.txt, checks that the same source also assembles for sm_80, and prints a
// one-line summary per kernel. Two compilations run at once (CI has two cores).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sourceFolders = ['kernels/cuda', 'kernels/controls'];
const outputFolder = path.join(root, 'build/kernels');
const nvcc = process.env.NVCC ?? 'nvcc';

interface KernelReport {
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
export function kernelSources(base: string = root): string[] {
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

/**
 * Fatbins in `outputs` that are missing or older than their .cu source or a header it includes, one line each:
 * what `npm run build:kernels` would change.
 */
export function staleKernels(base: string = root, outputs: string = path.join(base, 'build/kernels')): string[] {
  const stale: string[] = [];
  for (const source of kernelSources(base)) {
    const name = path.basename(source, '.cu');
    const fatbin = path.join(outputs, `${name}.fatbin`);
    if (!fs.existsSync(fatbin)) {
      stale.push(`${name}.fatbin is missing (source ${path.relative(base, source)})`);
      continue;
    }
    const built = fs.statSync(fatbin).mtimeMs;
    for (const file of withHeaders(source, base)) {
      if (fs.statSync(file).mtimeMs > built) {
        stale.push(`${name}.fatbin is older than ${path.relative(base, file)}`);
      }
    }
  }
  return stale;
}

async function compile(source: string): Promise<{ name: string; reports: KernelReport[]; seconds: number }> {
  const name = path.basename(source, '.cu');
  const started = performance.now();
  const include = ['-I', path.join(root, 'kernels/cuda')];
  const common = ['-std=c++17', '-O3', ...include, '-Xptxas', '-v'];
  const fatbin = path.join(outputFolder, `${name}.fatbin`);
  const targets = ['-gencode', 'arch=compute_90a,code=sm_90a', '-gencode', 'arch=compute_80,code=compute_80'];
  const main = await run(nvcc, ['-fatbin', ...common, ...targets, '-o', fatbin, source], { maxBuffer: 1 << 24 });
  const sm80 = await run(nvcc, ['-cubin', ...common, '-arch=sm_80', '-o', '/dev/null', source], {
    maxBuffer: 1 << 24,
  });
  const report = `${main.stdout}${main.stderr}\n# sm_80 check\n${sm80.stdout}${sm80.stderr}`;
  fs.writeFileSync(path.join(outputFolder, `${name}.ptxas.txt`), report);
  return { name, reports: parsePtxasReport(report), seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  fs.mkdirSync(outputFolder, { recursive: true });
  const sources = kernelSources();
  const queue = [...sources];
  const results: Awaited<ReturnType<typeof compile>>[] = [];
  const failures: string[] = [];
  const worker = async (): Promise<void> => {
    for (let source = queue.shift(); source !== undefined; source = queue.shift()) {
      try {
        results.push(await compile(source));
      } catch (error) {
        const failure = error as { stderr?: string; message: string };
        failures.push(`${path.relative(root, source)}:\n${failure.stderr ?? failure.message}`);
      }
    }
  };
  const started = performance.now();
  await Promise.all([worker(), worker()]);
  for (const failure of failures) console.error(`nvcc failed for ${failure}`);
  results.sort((a, b) => a.name.localeCompare(b.name));
  console.log('kernel (sm_90a)                                   regs  smem B  stack B  spill B');
  for (const result of results) {
    for (const kernel of result.reports) {
      const cells = [kernel.registers, kernel.sharedBytes, kernel.stackBytes, kernel.spillBytes];
      console.log(
        `${`${result.name}/${kernel.name}`.padEnd(48)} ${cells.map((v) => String(v).padStart(6)).join('  ')}`,
      );
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`${results.length} of ${sources.length} kernel files built to build/kernels in ${seconds} s`);
  if (failures.length > 0) process.exitCode = 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
