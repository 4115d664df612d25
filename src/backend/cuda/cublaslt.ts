// bf16 GEMM through cuBLASLt: Y[T, N] = X[T, K] · W[N, K]ᵀ, all row-major bf16, fp32 accumulation (the layout of
// a PyTorch Linear). In cuBLASLt's column-major terms that is Yᵀ (N×T) = op(A) · B with A = W seen as K×N
// (TRANSA = T) and B = X seen as K×T. The algorithm is chosen once per (T, N, K) by the heuristic and kept; the
// workspace is owned here, so a matmul can be captured in a CUDA graph. Enum values and struct sizes are the GPU
// machine's cublasLt.h (CUBLASLT.md).
import path from 'node:path';
import { DramaError } from '../../errors.ts';
import type { CudaContext } from './context.ts';
import type { DevicePointer, Handle } from './driver.ts';
import { bindAll, type NativeFunction, type Signatures, toBigInt, tryLoadLibrary } from './library.ts';
import type { Allocation } from './memory.ts';

const COMPUTE_32F = 68;
const R_32F = 0;
const R_16BF = 14;
const OP_N = 0;
const OP_T = 1;
const DESC_TRANSA = 3;
const DESC_TRANSB = 4;
const PREFERENCE_MAX_WORKSPACE_BYTES = 1;
const ALGORITHM_BYTES = 64;
const HEURISTIC_RESULT_BYTES = 96;
const HEURISTIC_STATE_OFFSET = 72;
const HEURISTIC_WORKSPACE_OFFSET = 64;
const WORKSPACE_BYTES = 32 * 1024 * 1024;

const SIGNATURES: Signatures = {
  cublasLtCreate: ['int', ['_Out_ void**']],
  cublasLtDestroy: ['int', ['void*']],
  cublasLtGetVersion: ['size_t', []],
  cublasLtGetStatusName: ['const char*', ['int']],
  cublasLtMatmulDescCreate: ['int', ['_Out_ void**', 'int', 'int']],
  cublasLtMatmulDescDestroy: ['int', ['void*']],
  cublasLtMatmulDescSetAttribute: ['int', ['void*', 'int', 'void*', 'size_t']],
  cublasLtMatrixLayoutCreate: ['int', ['_Out_ void**', 'int', 'uint64_t', 'uint64_t', 'int64_t']],
  cublasLtMatrixLayoutDestroy: ['int', ['void*']],
  cublasLtMatmulPreferenceCreate: ['int', ['_Out_ void**']],
  cublasLtMatmulPreferenceDestroy: ['int', ['void*']],
  cublasLtMatmulPreferenceSetAttribute: ['int', ['void*', 'int', 'void*', 'size_t']],
  cublasLtMatmulAlgoGetHeuristic: [
    'int',
    ['void*', 'void*', 'void*', 'void*', 'void*', 'void*', 'void*', 'int', 'void*', '_Out_ int*'],
  ],
  cublasLtMatmul: [
    'int',
    [
      'void*',
      'void*',
      'void*',
      'uint64_t',
      'void*',
      'uint64_t',
      'void*',
      'void*',
      'uint64_t',
      'void*',
      'uint64_t',
      'void*',
      'void*',
      'uint64_t',
      'size_t',
      'void*',
    ],
  ],
};

/** Where cuBLASLt may live: an explicit path, the loader path, then the usual toolkit folders. */
function cublasLtCandidates(): string[] {
  const fromEnvironment = process.env.DRAMA3_CUBLASLT;
  const toolkitRoots = [process.env.CUDA_HOME, process.env.CUDA_PATH, '/usr/local/cuda'].filter(
    (root): root is string => typeof root === 'string' && root.length > 0,
  );
  const inToolkits = toolkitRoots.flatMap((root) => [
    path.join(root, 'targets/x86_64-linux/lib/libcublasLt.so.13'),
    path.join(root, 'lib64/libcublasLt.so.13'),
  ]);
  return [...(fromEnvironment ? [fromEnvironment] : []), 'libcublasLt.so.13', ...inToolkits];
}

type Native = Record<string, NativeFunction>;

interface Plan {
  readonly description: Handle;
  readonly layouts: readonly [Handle, Handle, Handle];
  readonly algorithm: Uint8Array;
}

function int32Value(value: number): Int32Array {
  return new Int32Array(new ArrayBuffer(4)).fill(value);
}

export class CublasLt {
  private readonly native: Native;
  private readonly handle: Handle;
  private readonly workspace: Allocation;
  private readonly plans = new Map<string, Plan>();
  private readonly alpha = new Float32Array(new ArrayBuffer(4)).fill(1);
  private readonly beta = new Float32Array(new ArrayBuffer(4)).fill(0);
  readonly version: number;

  constructor(private readonly cuda: CudaContext) {
    const opened = tryLoadLibrary(cublasLtCandidates());
    if ('reason' in opened) {
      throw new DramaError('CUBLASLT_UNAVAILABLE', `cannot load libcublasLt.so.13: ${opened.reason}`, {
        kind: 'device',
      });
    }
    this.native = bindAll(opened.library, SIGNATURES);
    this.version = Number(this.native.cublasLtGetVersion!());
    const handle: unknown[] = [null];
    this.check(this.native.cublasLtCreate!(handle), 'cublasLtCreate');
    this.handle = toBigInt(handle[0]);
    this.workspace = cuda.allocate(WORKSPACE_BYTES, 'cuBLASLt workspace');
  }

  private check(status: number, call: string): void {
    if (status === 0) return;
    const name = (this.native.cublasLtGetStatusName!(status) as unknown as string | null) ?? `CUBLAS_STATUS_${status}`;
    throw new DramaError(name, `${call} failed: ${name} (${status})`, { kind: 'device' });
  }

  private create(kind: string, call: string, ...args: unknown[]): Handle {
    const out: unknown[] = [null];
    this.check(this.native[kind]!(out, ...args), call);
    return toBigInt(out[0]);
  }

  /** Y[rows, outFeatures] = X[rows, inFeatures] · W[outFeatures, inFeatures]ᵀ on `stream` (default: the context's). */
  matmul(
    y: DevicePointer,
    x: DevicePointer,
    w: DevicePointer,
    rows: number,
    outFeatures: number,
    inFeatures: number,
    stream: Handle = this.cuda.stream,
  ): void {
    const plan = this.plan(rows, outFeatures, inFeatures);
    const [layoutA, layoutB, layoutD] = plan.layouts;
    const status = this.native.cublasLtMatmul!(
      this.handle,
      plan.description,
      this.alpha,
      w,
      layoutA,
      x,
      layoutB,
      this.beta,
      y,
      layoutD,
      y,
      layoutD,
      plan.algorithm,
      this.workspace.pointer,
      WORKSPACE_BYTES,
      stream,
    );
    this.check(status, `cublasLtMatmul(${rows}x${inFeatures} · ${outFeatures}x${inFeatures}ᵀ)`);
  }

  private plan(rows: number, outFeatures: number, inFeatures: number): Plan {
    const key = `${rows}x${outFeatures}x${inFeatures}`;
    const known = this.plans.get(key);
    if (known) return known;
    const description = this.create('cublasLtMatmulDescCreate', 'cublasLtMatmulDescCreate', COMPUTE_32F, R_32F);
    const setDescription = (attribute: number, value: number) =>
      this.check(
        this.native.cublasLtMatmulDescSetAttribute!(description, attribute, int32Value(value), 4),
        'cublasLtMatmulDescSetAttribute',
      );
    setDescription(DESC_TRANSA, OP_T);
    setDescription(DESC_TRANSB, OP_N);
    const layout = (rowsOf: number, columns: number, leading: number) =>
      this.create('cublasLtMatrixLayoutCreate', 'cublasLtMatrixLayoutCreate', R_16BF, rowsOf, columns, leading);
    const layoutA = layout(inFeatures, outFeatures, inFeatures);
    const layoutB = layout(inFeatures, rows, inFeatures);
    const layoutD = layout(outFeatures, rows, outFeatures);
    const preference = this.create('cublasLtMatmulPreferenceCreate', 'cublasLtMatmulPreferenceCreate');
    const workspaceLimit = new BigUint64Array(new ArrayBuffer(8)).fill(BigInt(WORKSPACE_BYTES));
    this.check(
      this.native.cublasLtMatmulPreferenceSetAttribute!(preference, PREFERENCE_MAX_WORKSPACE_BYTES, workspaceLimit, 8),
      'cublasLtMatmulPreferenceSetAttribute',
    );
    const results = new Uint8Array(new ArrayBuffer(HEURISTIC_RESULT_BYTES));
    const returned = [0];
    const status = this.native.cublasLtMatmulAlgoGetHeuristic!(
      this.handle,
      description,
      layoutA,
      layoutB,
      layoutD,
      layoutD,
      preference,
      1,
      results,
      returned,
    );
    this.check(this.native.cublasLtMatmulPreferenceDestroy!(preference), 'cublasLtMatmulPreferenceDestroy');
    this.check(status, `cublasLtMatmulAlgoGetHeuristic(${key})`);
    const view = new DataView(results.buffer);
    if (returned[0] === 0 || view.getInt32(HEURISTIC_STATE_OFFSET, true) !== 0) {
      throw new DramaError('CUBLASLT_NO_ALGORITHM', `cuBLASLt offers no bf16 algorithm for ${key}`, { kind: 'device' });
    }
    if (Number(view.getBigUint64(HEURISTIC_WORKSPACE_OFFSET, true)) > WORKSPACE_BYTES) {
      throw new DramaError('CUBLASLT_WORKSPACE_TOO_SMALL', `cuBLASLt algorithm for ${key} needs more workspace`, {
        kind: 'device',
      });
    }
    const algorithm = new Uint8Array(new ArrayBuffer(ALGORITHM_BYTES));
    algorithm.set(results.subarray(0, ALGORITHM_BYTES));
    const plan: Plan = { description, layouts: [layoutA, layoutB, layoutD], algorithm };
    this.plans.set(key, plan);
    return plan;
  }

  destroy(): void {
    for (const plan of this.plans.values()) {
      this.native.cublasLtMatmulDescDestroy!(plan.description);
      for (const layout of plan.layouts) this.native.cublasLtMatrixLayoutDestroy!(layout);
    }
    this.plans.clear();
    this.check(this.native.cublasLtDestroy!(this.handle), 'cublasLtDestroy');
    this.workspace.free();
  }
}
