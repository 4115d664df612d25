// The Backend interface: the coarse ops Drama 3 is written against (ARCHITECTURE.md). A backend owns its buffers
// (`B`): typed arrays on the cpu, device allocations on cuda. The model only composes these ops; every op's arithmetic,
// precision and rounding live in the backend.
// Conventions: T rows (prompt rows or frames), H hidden width, activations [T, C] row-major with C contiguous;
// linear weights [out, in] row-major (torch's nn.Linear layout), y = x · Wᵀ.

/** A linear layer's weight: dense (bf16 values widened, or fp32), or FP8 e4m3 values with 128×128 block scales. */
export interface LinearWeight<B> {
  readonly outFeatures: number;
  readonly inFeatures: number;
  readonly format: 'dense' | 'fp8-block';
  /** [out, in] values (for fp8-block: the e4m3 values, unscaled). */
  readonly values: B;
  /** fp8-block only: [ceil(out/128), ceil(in/128)] scales, true weight = value × scale. */
  readonly scales?: B;
}

/** A SwiGLU MLP: down(silu(gate(x)) · up(x)). */
export interface SwiGluWeights<B> {
  readonly gate: LinearWeight<B>;
  readonly up: LinearWeight<B>;
  readonly down: LinearWeight<B>;
}

/** The sparse MoE block: router softmax → top-k → renormalised experts, plus the sigmoid-gated shared expert. */
export interface MoeWeights<B> {
  readonly router: LinearWeight<B>;
  readonly experts: readonly SwiGluWeights<B>[];
  readonly topK: number;
  readonly shared: SwiGluWeights<B>;
  readonly sharedGate: LinearWeight<B>;
}

/** An attention block's scalar shape: heads, head dim, partial RoPE, the output gate and the q/k norms' eps. */
export interface AttentionGeometry {
  readonly heads: number;
  readonly keyValueHeads: number;
  readonly headDim: number;
  readonly rotaryDim: number;
  readonly ropeTheta: number;
  readonly ropeStyle: 'neox' | 'interleaved';
  readonly outputGate: boolean;
  readonly eps: number;
}

/** Softmax attention with q/k RMSNorm per head, partial RoPE, GQA; the backbone's form adds the output gate. */
export interface AttentionWeights<B> extends AttentionGeometry {
  /** [heads·hd·2, H] with per head [query | gate] rows when outputGate, else [heads·hd, H]. */
  readonly qProj: LinearWeight<B>;
  readonly kProj: LinearWeight<B>;
  readonly vProj: LinearWeight<B>;
  readonly oProj: LinearWeight<B>;
  /** Zero-centred norms over the head dim. [hd] */
  readonly qNorm: B;
  readonly kNorm: B;
}

/** Gated DeltaNet (linear attention) weights; conv is [C, K] with C = 2·Kh·Kd + Vh·Vd. */
export interface DeltaNetWeights<B> {
  readonly inProjQkv: LinearWeight<B>;
  readonly inProjZ: LinearWeight<B>;
  readonly inProjB: LinearWeight<B>;
  readonly inProjA: LinearWeight<B>;
  readonly outProj: LinearWeight<B>;
  readonly conv: B;
  /** [Vh] */
  readonly aLog: B;
  readonly dtBias: B;
  /** Plain-weight gated output norm over the value head dim. [Vd] */
  readonly norm: B;
  readonly keyHeads: number;
  readonly valueHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
  readonly convKernel: number;
  readonly eps: number;
}

/** One attention layer's K/V rows: [capacity, kvHeads, hd] each; rows [0, length) are filled. */
export interface KeyValueCache<B> {
  keys: B;
  values: B;
  length: number;
  capacity: number;
}

/** One Gated DeltaNet layer's carried state: conv history [K−1, C] and recurrent state [Vh, Kd, Vd]. */
export interface DeltaNetState<B> {
  readonly conv: B;
  readonly recurrent: B;
}

export interface Backend<B> {
  readonly name: string;
  /** A zeroed buffer of `count` elements. */
  allocate(count: number): B;
  /** A buffer holding these values (weights are exact in fp32: bf16 widened, e4m3 values, fp32 scales). */
  fromHost(values: Float32Array): B;
  /** A host copy of `count` elements from `offset`, as doubles. */
  toHost(buffer: B, offset: number, count: number): Float64Array;
  /** Elements [offset, offset + count) as a buffer sharing storage. */
  view(buffer: B, offset: number, count: number): B;
  copy(source: B, target: B, count: number): void;
  /** target += source over `count` elements (the residual add). */
  add(target: B, source: B, count: number): void;
  /** out[t] = table[ids[t]]: [T, C]. */
  embed(table: B, ids: Int32Array, out: B, rows: number, cols: number): void;
  /** out row `row` = (textTable[main] + codeTable[codeRow]) / sqrt(2) (MODEL.md §1). */
  frameRow(textTable: B, codeTable: B, main: number, codeRow: number, out: B, row: number, cols: number): void;
  /** y = x · rsqrt(mean x² + eps) · (1 + w), rows of width cols. */
  zeroCentredRmsNorm(x: B, weight: B, out: B, rows: number, cols: number, eps: number): void;
  linear(x: B, weight: LinearWeight<B>, out: B, rows: number): void;
  /** out [T, a + b] = [a | b] row by row. */
  concatenateColumns(a: B, aCols: number, b: B, bCols: number, out: B, rows: number): void;
  /** T rows at positions cache.length.. : appends their K/V to the cache, attends causally; out [T, H]. */
  attention(weights: AttentionWeights<B>, x: B, cache: KeyValueCache<B>, out: B, rows: number): void;
  /** T rows through Gated DeltaNet, carrying `state`; out [T, H]. Any split of rows into calls agrees. */
  deltaNet(weights: DeltaNetWeights<B>, x: B, state: DeltaNetState<B>, out: B, rows: number): void;
  moe(weights: MoeWeights<B>, x: B, out: B, rows: number): void;
  swiGlu(weights: SwiGluWeights<B>, x: B, out: B, rows: number): void;
}
