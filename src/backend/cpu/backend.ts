// The cpu backend: the reference implementation of every Backend op over typed arrays, in one of three precision
// policies (precision.ts). Buffers are Float32Array (bf16, fp32) or Float64Array (fp64); views share storage.

import type { FloatArray } from '../../numeric/float-array.ts';
import { rmsNormZeroCentred } from '../../numeric/norms.ts';
import type {
  AttentionWeights,
  Backend,
  DeltaNetState,
  DeltaNetWeights,
  KeyValueCache,
  LinearWeight,
  MoeWeights,
  SwiGluWeights,
} from '../types.ts';
import { runAttention } from './attention-block.ts';
import { type DeltaRuleForm, runDeltaNet } from './delta-net-block.ts';
import { runLinear } from './linear-layer.ts';
import { runMoe, runSwiGlu } from './moe-block.ts';
import { embedRows, frameRow } from './ops/embedding.ts';
import { PRECISION_POLICIES, type PrecisionName, type PrecisionPolicy } from './precision.ts';
import { ScratchPool } from './scratch.ts';

export interface CpuBackendOptions {
  readonly precision?: PrecisionName;
  /** The delta rule's form; recurrent (the default) makes every prefill chunking bit-identical. */
  readonly deltaRule?: DeltaRuleForm;
}

export class CpuBackend implements Backend<FloatArray> {
  readonly name = 'cpu';
  readonly policy: PrecisionPolicy;
  readonly deltaRule: DeltaRuleForm;
  private readonly scratch: ScratchPool;

  constructor(options: CpuBackendOptions = {}) {
    this.policy = PRECISION_POLICIES[options.precision ?? 'bf16'];
    this.deltaRule = options.deltaRule ?? 'recurrent';
    this.scratch = new ScratchPool(this.policy);
  }

  allocate(count: number): FloatArray {
    return this.policy.allocate(count);
  }

  fromHost(values: Float32Array): FloatArray {
    if (this.policy.name === 'fp64') return Float64Array.from(values);
    return values;
  }

  toHost(buffer: FloatArray, offset: number, count: number): Float64Array {
    return Float64Array.from(buffer.subarray(offset, offset + count));
  }

  view(buffer: FloatArray, offset: number, count: number): FloatArray {
    return buffer.subarray(offset, offset + count);
  }

  copy(source: FloatArray, target: FloatArray, count: number): void {
    target.set(source.subarray(0, count));
  }

  add(target: FloatArray, source: FloatArray, count: number): void {
    for (let i = 0; i < count; i++) target[i] = target[i]! + source[i]!;
    this.policy.roundActivations(target, count);
  }

  embed(table: FloatArray, ids: Int32Array, out: FloatArray, rows: number, cols: number): void {
    embedRows(table, ids, out, rows, cols);
  }

  frameRow(
    textTable: FloatArray,
    codeTable: FloatArray,
    main: number,
    codeRow: number,
    out: FloatArray,
    row: number,
    cols: number,
  ): void {
    frameRow(textTable, codeTable, main, codeRow, out, row * cols, cols);
    this.policy.roundActivations(out.subarray(row * cols), cols);
  }

  zeroCentredRmsNorm(
    x: FloatArray,
    weight: FloatArray,
    out: FloatArray,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    rmsNormZeroCentred(x, weight, out, rows, cols, eps);
    this.policy.roundActivations(out, rows * cols);
  }

  linear(x: FloatArray, weight: LinearWeight<FloatArray>, out: FloatArray, rows: number): void {
    runLinear(this.policy, this.scratch, x, weight, out, rows);
  }

  concatenateColumns(a: FloatArray, aCols: number, b: FloatArray, bCols: number, out: FloatArray, rows: number): void {
    const width = aCols + bCols;
    for (let t = 0; t < rows; t++) {
      out.set(a.subarray(t * aCols, (t + 1) * aCols), t * width);
      out.set(b.subarray(t * bCols, (t + 1) * bCols), t * width + aCols);
    }
  }

  attention(
    weights: AttentionWeights<FloatArray>,
    x: FloatArray,
    cache: KeyValueCache<FloatArray>,
    out: FloatArray,
    rows: number,
  ): void {
    runAttention(this.policy, this.scratch, weights, x, cache, out, rows);
  }

  deltaNet(
    weights: DeltaNetWeights<FloatArray>,
    x: FloatArray,
    state: DeltaNetState<FloatArray>,
    out: FloatArray,
    rows: number,
  ): void {
    runDeltaNet(this.policy, this.scratch, this.deltaRule, weights, x, state, out, rows);
  }

  moe(weights: MoeWeights<FloatArray>, x: FloatArray, out: FloatArray, rows: number): void {
    runMoe(this.policy, this.scratch, weights, x, out, rows);
  }

  swiGlu(weights: SwiGluWeights<FloatArray>, x: FloatArray, out: FloatArray, rows: number): void {
    runSwiGlu(this.policy, this.scratch, weights, x, out, rows);
  }
}
