// The gated delta rule of Gated DeltaNet (MODEL.md §2), recurrent and 64-row chunked forms of the same map.
//   q, k: [T, Hk, Dk] (after the conv; L2-normalised here, eps 1e-6, and q scaled by 1/sqrt(Dk));
//   v: [T, Hv, Dv]; g (log decay), beta: [T, Hv]; state: [Hv, Dk, Dv] carried across calls; out: [T, Hv, Dv].
//   Value head h reads key head floor(h / (Hv/Hk)).
//   per row: S ← S·exp(g); S ← S + k ⊗ β(v − Sᵀk); o = Sᵀq
// The chunked form (rows in blocks of chunkSize, UT transform by forward substitution) equals the recurrent form in
// exact arithmetic; both run in double precision and store the state once per row (recurrent) or chunk (chunked).
import type { FloatArray } from '../../../numeric/float-array.ts';

const L2_EPS = 1e-6;

export interface DeltaRuleShape {
  readonly keyHeads: number;
  readonly valueHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
}

/** Copies head `head` of row `row` of x: [T, H, D] into target, L2-normalised and multiplied by `scale`. */
function normalizedHead(
  x: FloatArray,
  row: number,
  head: number,
  heads: number,
  dim: number,
  scale: number,
  target: Float64Array,
): void {
  const start = (row * heads + head) * dim;
  let sum = 0;
  for (let d = 0; d < dim; d++) sum += x[start + d]! * x[start + d]!;
  const factor = scale / Math.sqrt(sum + L2_EPS);
  for (let d = 0; d < dim; d++) target[d] = x[start + d]! * factor;
}

/** The recurrent form's working rows: q and k heads [Kd], the delta [Vd] and one head's state [Kd·Vd], in double. */
export interface DeltaRuleScratch {
  readonly query: Float64Array;
  readonly key: Float64Array;
  readonly delta: Float64Array;
  readonly state: Float64Array;
}

export function deltaRuleScratch(shape: DeltaRuleShape): DeltaRuleScratch {
  return {
    query: new Float64Array(shape.keyDim),
    key: new Float64Array(shape.keyDim),
    delta: new Float64Array(shape.valueDim),
    state: new Float64Array(shape.keyDim * shape.valueDim),
  };
}

export function gatedDeltaRecurrent(
  q: FloatArray,
  k: FloatArray,
  v: FloatArray,
  g: FloatArray,
  beta: FloatArray,
  state: FloatArray,
  out: FloatArray,
  rows: number,
  shape: DeltaRuleShape,
  scratch: DeltaRuleScratch = deltaRuleScratch(shape),
): void {
  const { keyHeads, valueHeads, keyDim, valueDim } = shape;
  const group = valueHeads / keyHeads;
  const queryScale = 1 / Math.sqrt(keyDim);
  const { query, key, delta, state: s } = scratch;
  for (let h = 0; h < valueHeads; h++) {
    const keyHead = Math.floor(h / group);
    const stateStart = h * keyDim * valueDim;
    for (let i = 0; i < s.length; i++) s[i] = state[stateStart + i]!;
    for (let t = 0; t < rows; t++) {
      normalizedHead(q, t, keyHead, keyHeads, keyDim, queryScale, query);
      normalizedHead(k, t, keyHead, keyHeads, keyDim, 1, key);
      const decay = Math.exp(g[t * valueHeads + h]!);
      const b = beta[t * valueHeads + h]!;
      for (let i = 0; i < s.length; i++) s[i] *= decay;
      const vStart = (t * valueHeads + h) * valueDim;
      for (let e = 0; e < valueDim; e++) {
        let memory = 0;
        for (let d = 0; d < keyDim; d++) memory += s[d * valueDim + e]! * key[d]!;
        delta[e] = (v[vStart + e]! - memory) * b;
      }
      for (let d = 0; d < keyDim; d++) {
        const kd = key[d]!;
        for (let e = 0; e < valueDim; e++) s[d * valueDim + e] += kd * delta[e]!;
      }
      for (let e = 0; e < valueDim; e++) {
        let sum = 0;
        for (let d = 0; d < keyDim; d++) sum += s[d * valueDim + e]! * query[d]!;
        out[vStart + e] = sum;
      }
      // Store (and so round, for an fp32 state) once per row, as a per-row kernel keeps its state.
      for (let i = 0; i < s.length; i++) {
        state[stateStart + i] = s[i]!;
        s[i] = state[stateStart + i]!;
      }
    }
  }
}

export function gatedDeltaChunked(
  q: FloatArray,
  k: FloatArray,
  v: FloatArray,
  g: FloatArray,
  beta: FloatArray,
  state: FloatArray,
  out: FloatArray,
  rows: number,
  shape: DeltaRuleShape,
  chunkSize = 64,
): void {
  const { keyHeads, valueHeads, keyDim, valueDim } = shape;
  const group = valueHeads / keyHeads;
  const queryScale = 1 / Math.sqrt(keyDim);
  const s = new Float64Array(keyDim * valueDim);
  const queries = new Float64Array(chunkSize * keyDim);
  const keys = new Float64Array(chunkSize * keyDim);
  const cumulative = new Float64Array(chunkSize);
  const lower = new Float64Array(chunkSize * chunkSize);
  const newValues = new Float64Array(chunkSize * valueDim);
  const keyCumulativeDecay = new Float64Array(chunkSize * keyDim);
  const row = new Float64Array(Math.max(keyDim, valueDim));
  for (let h = 0; h < valueHeads; h++) {
    const keyHead = Math.floor(h / group);
    const stateStart = h * keyDim * valueDim;
    for (let i = 0; i < s.length; i++) s[i] = state[stateStart + i]!;
    for (let chunkStart = 0; chunkStart < rows; chunkStart += chunkSize) {
      const length = Math.min(chunkSize, rows - chunkStart);
      let running = 0;
      for (let n = 0; n < length; n++) {
        const t = chunkStart + n;
        normalizedHead(q, t, keyHead, keyHeads, keyDim, queryScale, row);
        queries.set(row.subarray(0, keyDim), n * keyDim);
        normalizedHead(k, t, keyHead, keyHeads, keyDim, 1, row);
        keys.set(row.subarray(0, keyDim), n * keyDim);
        running += g[t * valueHeads + h]!;
        cumulative[n] = running;
      }
      // Strictly lower L[i][j] = β_i (k_i·k_j) e^{c_i − c_j}; solve (I + L) X = B for B = βv and B = βk e^{c}.
      for (let i = 0; i < length; i++) {
        const betaI = beta[(chunkStart + i) * valueHeads + h]!;
        for (let j = 0; j < i; j++) {
          let dot = 0;
          for (let d = 0; d < keyDim; d++) dot += keys[i * keyDim + d]! * keys[j * keyDim + d]!;
          lower[i * chunkSize + j] = betaI * dot * Math.exp(cumulative[i]! - cumulative[j]!);
        }
        const vStart = ((chunkStart + i) * valueHeads + h) * valueDim;
        for (let e = 0; e < valueDim; e++) {
          let value = betaI * v[vStart + e]!;
          for (let j = 0; j < i; j++) value -= lower[i * chunkSize + j]! * newValues[j * valueDim + e]!;
          newValues[i * valueDim + e] = value;
        }
        const decayI = Math.exp(cumulative[i]!);
        for (let d = 0; d < keyDim; d++) {
          let value = betaI * keys[i * keyDim + d]! * decayI;
          for (let j = 0; j < i; j++) value -= lower[i * chunkSize + j]! * keyCumulativeDecay[j * keyDim + d]!;
          keyCumulativeDecay[i * keyDim + d] = value;
        }
      }
      // v_new = X_v − X_k · S: the part of each value the carried state does not already predict.
      for (let i = 0; i < length; i++) {
        for (let e = 0; e < valueDim; e++) {
          let predicted = 0;
          for (let d = 0; d < keyDim; d++) predicted += keyCumulativeDecay[i * keyDim + d]! * s[d * valueDim + e]!;
          newValues[i * valueDim + e] -= predicted;
        }
      }
      for (let i = 0; i < length; i++) {
        const decayI = Math.exp(cumulative[i]!);
        const oStart = ((chunkStart + i) * valueHeads + h) * valueDim;
        for (let e = 0; e < valueDim; e++) {
          let sum = 0;
          for (let d = 0; d < keyDim; d++) sum += queries[i * keyDim + d]! * s[d * valueDim + e]!;
          row[e] = sum * decayI;
        }
        for (let j = 0; j <= i; j++) {
          let dot = 0;
          for (let d = 0; d < keyDim; d++) dot += queries[i * keyDim + d]! * keys[j * keyDim + d]!;
          const weight = dot * Math.exp(cumulative[i]! - cumulative[j]!);
          for (let e = 0; e < valueDim; e++) row[e] += weight * newValues[j * valueDim + e]!;
        }
        for (let e = 0; e < valueDim; e++) out[oStart + e] = row[e]!;
      }
      const last = cumulative[length - 1]!;
      const chunkDecay = Math.exp(last);
      for (let i = 0; i < s.length; i++) s[i] *= chunkDecay;
      for (let j = 0; j < length; j++) {
        const keyDecay = Math.exp(last - cumulative[j]!);
        for (let d = 0; d < keyDim; d++) {
          const kd = keys[j * keyDim + d]! * keyDecay;
          for (let e = 0; e < valueDim; e++) s[d * valueDim + e] += kd * newValues[j * valueDim + e]!;
        }
      }
      for (let i = 0; i < s.length; i++) {
        state[stateStart + i] = s[i]!;
        s[i] = state[stateStart + i]!;
      }
    }
  }
}
