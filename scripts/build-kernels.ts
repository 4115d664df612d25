// npm run build:kernels: compiles every kernels/cuda/*.cu (and the contract's kernels/controls/*.cu) with nvcc to
// build/kernels/<name>.fatbin holding sm_90a SASS plus compute_80 PTX, saves ptxas's register / shared-memory /
// spill report beside each as <name>.ptxas.txt, checks that the same source also assembles for sm_80, and prints a
// one-line summary per kernel. Two compilations run at once (CI has two cores). With --changed, only the fatbins
// that are missing or older than their sources are rebuilt (the device carry uses it; CI builds everything).
// With --at <commit> --out <folder> [--only name,name], it builds that commit's kernels (or the named .cu files of
// kernels/cuda) into the folder instead: the earlier build a variant run compares against (bench/gpu-variants.sh).
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type KernelReport, kernelSources, parsePtxasReport, staleReasons } from './kernel-files.ts';

const run = promisify(execFile);
const repository = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nvcc = process.env.NVCC ?? 'nvcc';

/** The value after `flag` on the command line, if the flag is there. */
function option(flag: string): string | undefined {
  const index = process.argv.indexOf(flag);
  if (index < 0) return undefined;
  const value = process.argv[index + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
  return value;
}

/** A folder holding `commit`'s kernels/ (from git, the working tree untouched). */
function kernelsAt(commit: string): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'kernels-at-'));
  const archive = path.join(folder, 'kernels.tar');
  execFileSync('git', ['-C', repository, 'archive', '-o', archive, commit, 'kernels']);
  execFileSync('tar', ['-xf', archive, '-C', folder]);
  return folder;
}

const commit = option('--at');
const root = commit === undefined ? repository : kernelsAt(commit);
const outputFolder = path.resolve(option('--out') ?? path.join(repository, 'build/kernels'));
const only = option('--only')?.split(',');

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
  if (commit !== undefined && option('--out') === undefined) throw new Error('--at needs --out <folder>');
  fs.mkdirSync(outputFolder, { recursive: true });
  const changedOnly = process.argv.includes('--changed');
  const named = kernelSources(root).filter(
    (source) =>
      only === undefined || (path.dirname(source).endsWith('cuda') && only.includes(path.basename(source, '.cu'))),
  );
  if (only !== undefined && named.length !== only.length) {
    throw new Error(`--only names kernels/cuda files that are not there: ${only.join(', ')}`);
  }
  const sources = named.filter((source) => !changedOnly || staleReasons(source, root, outputFolder).length > 0);
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
  const inside = path.relative(repository, outputFolder);
  const target = inside.startsWith('..') ? outputFolder : inside;
  console.log(`${results.length} of ${sources.length} kernel files built to ${target} in ${seconds} s`);
  if (failures.length > 0) process.exitCode = 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
