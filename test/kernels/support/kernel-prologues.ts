// Reads kernel entry points out of CUDA sources (macros included) and names those that do not begin by waiting for
// the previous grids, as a programmatic dependent launch requires (kernels/cuda/common.cuh).

export interface KernelEntry {
  /** `path:line`. */
  readonly location: string;
  readonly name: string;
  /** The body's first statement, whitespace collapsed. */
  readonly firstStatement: string;
  /** The body's first eight statements, whitespace collapsed, without their semicolons. */
  readonly leadingStatements: readonly string[];
}

/**
 * Kernels that request their weight tiles before they wait (the weights are not written by an earlier kernel): they
 * let dependents launch first and wait inside their tile loop, before reading x or returning.
 */
const WAIT_AFTER_WEIGHT_PREFETCH = new Set([
  'gemm_rows16_bf16',
  'gemm_rows16k128_bf16',
  'gemm_rows64_bf16',
  'gemm_rows96_bf16',
  'gemm_segments_rows16_bf16',
  'gemm_segments_rows16k128_bf16',
  'gemm_segments_rows64_bf16',
  'gemm_segments_rows96_bf16',
  'gemm_wg64x128_bf16',
  'gemm_wg64x64_bf16',
  'gemm_segments_wg64x128_bf16',
  'gemm_segments_wg64x64_bf16',
  'gemv_staged_bf16',
  'gemv_bf16',
  'control_gemm_k_reversed_with_rows',
  'control_gemm_segments_shared_chunking',
]);

/** A flag the few-rows kernel's shared form takes from its own argument before its idle check: no load. */
const FOLD_FLAG = /^const bool shared = fold == ATTENTION_FOLD_SHARED$/;

/**
 * The spread attention kernels: their blocks with no keys to walk (or, in the few-rows kernel's shared form, whose
 * call the other walk takes) read the host-written row table and return before waiting, then every other block waits
 * (kernels/cuda/attention.cuh, attention_block_idle, says why that is safe).
 */
function idleBlocksReturnUnwaited(entry: KernelEntry): boolean {
  const [first, ...rest] = entry.leadingStatements;
  const [second, third] = FOLD_FLAG.test(rest[0] ?? '') ? rest.slice(1) : rest;
  return (
    first === 'allow_dependent_launch()' &&
    /^if \((attention_block_idle|few_rows_block_idle)</.test(second ?? '') &&
    (second?.endsWith(') return') ?? false) &&
    third === 'wait_for_previous_grids()'
  );
}

/** The helpers that load weights a step never writes (kernels/cuda/rms_norm.cuh, attention.cuh). */
const EARLY_LOAD_HELPERS = /\b(early_pass_weights|prepare_early)\(/;

/**
 * A kernel that loads its weights before it waits (the norms, the fused q|k|v prepare): it lets dependents launch,
 * then only declares constants (from an early-load helper, or index arithmetic that reads no memory), then waits
 * before any other load or any return.
 */
function waitsAfterEarlyLoads(entry: KernelEntry): boolean {
  const [first, ...rest] = entry.leadingStatements;
  const wait = rest.indexOf('wait_for_previous_grids()');
  if (first !== 'allow_dependent_launch()' || wait < 1) return false;
  return rest
    .slice(0, wait)
    .every(
      (statement) => statement.startsWith('const ') && (EARLY_LOAD_HELPERS.test(statement) || !statement.includes('[')),
    );
}

function blankComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
    .replace(/\/\/[^\n]*/g, (comment) => ' '.repeat(comment.length));
}

function closing(text: string, open: number, left: string, right: string): number {
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    if (text[index] === left) depth++;
    else if (text[index] === right && --depth === 0) return index;
  }
  throw new Error(`unbalanced ${left}${right} from offset ${open}`);
}

export function kernelEntries(path: string, source: string): KernelEntry[] {
  // Macro line continuations become plain line ends, so that line numbers still count.
  const text = blankComments(source).replace(/\\\n/g, ' \n');
  const entries: KernelEntry[] = [];
  const marker =
    /extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_#]*)\s*\(/g;
  for (let match = marker.exec(text); match !== null; match = marker.exec(text)) {
    const parameters = match.index + match[0].length - 1;
    const open = text.indexOf('{', closing(text, parameters, '(', ')'));
    const body = text.slice(open + 1, closing(text, open, '{', '}'));
    const line = text.slice(0, match.index).split('\n').length;
    const leadingStatements = body
      .split(';')
      .slice(0, 8)
      .map((statement) => statement.replace(/\s+/g, ' ').trim());
    const firstStatement = leadingStatements[0] ?? '';
    entries.push({
      location: `${path}:${line}`,
      name: match[1] ?? '?',
      firstStatement: `${firstStatement};`,
      leadingStatements,
    });
  }
  return entries;
}

/** `location name: first statement` of every entry that does not start by waiting. */
export function missingPrologues(entries: readonly KernelEntry[]): string[] {
  return entries
    .filter((entry) => {
      // Waiting without letting dependents start early: the kernels that write weights (a GEMM prefetches weights
      // before it waits, so it must not start while they are written).
      if (entry.firstStatement === 'KERNEL_PROLOGUE();' || entry.firstStatement === 'wait_for_previous_grids();')
        return false;
      if (idleBlocksReturnUnwaited(entry) || waitsAfterEarlyLoads(entry)) return false;
      return !(WAIT_AFTER_WEIGHT_PREFETCH.has(entry.name) && entry.firstStatement === 'allow_dependent_launch();');
    })
    .map((entry) => `${entry.location} ${entry.name}: ${entry.firstStatement}`);
}
