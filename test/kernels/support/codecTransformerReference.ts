// The cpu windowed transformer's attention-side arithmetic (src/codec/transformer.ts applyRope and attend, and its
// SwiGLU line), rewritten line by line over one lane so that the codec transformer kernels' contract cases can hold
// each stage alone: transformer.ts keeps them private to its layer. test/kernels/codecTransformerReference.test.ts
// proves these functions rebuild WindowedTransformer.forward bit for bit.

/** The attention geometry of a codec transformer (CodecTransformerConfig's fields the kernels see). */
export interface AttentionGeometry {
  readonly heads: number;
  readonly headDim: number;
  readonly window: number;
  readonly ropeBase: number;
}

/**
 * applyRope: rotates interleaved pairs of each head of `row` (heads × headDim values at `offset`) by `position`, the
 * table's (cos, sin) where it covers the position, else cos/sin of position / base^(2i/headDim) rounded to float32.
 */
export function referenceRope(
  row: Float32Array,
  offset: number,
  geometry: AttentionGeometry,
  position: number,
  table: Float32Array | undefined,
): void {
  const { heads, headDim, ropeBase } = geometry;
  const pairs = headDim / 2;
  const tabled = table !== undefined && position < table.length / headDim;
  for (let pair = 0; pair < pairs; pair++) {
    let cosine: number;
    let sine: number;
    if (tabled) {
      cosine = table[(position * pairs + pair) * 2]!;
      sine = table[(position * pairs + pair) * 2 + 1]!;
    } else {
      const angle = position / ropeBase ** ((2 * pair) / headDim);
      cosine = Math.fround(Math.cos(angle));
      sine = Math.fround(Math.sin(angle));
    }
    for (let head = 0; head < heads; head++) {
      const index = offset + head * headDim + 2 * pair;
      const real = row[index]!;
      const imaginary = row[index + 1]!;
      row[index] = real * cosine - imaginary * sine;
      row[index + 1] = imaginary * cosine + real * sine;
    }
  }
}

/** RoPE on q and k of `rows` qkv rows [rows, 3·width] from row `firstRow`, row r at position start + r. */
export function referenceRopeRows(
  qkv: Float32Array,
  firstRow: number,
  rows: number,
  start: number,
  geometry: AttentionGeometry,
  table: Float32Array | undefined,
): void {
  const width = geometry.heads * geometry.headDim;
  for (let row = 0; row < rows; row++) {
    const rowBase = (firstRow + row) * 3 * width;
    referenceRope(qkv, rowBase, geometry, start + row, table);
    referenceRope(qkv, rowBase + width, geometry, start + row, table);
  }
}

/**
 * attend over one lane's `rows` rows of qkv (already rotated) from row `firstRow`, row r at position start + r:
 * writes each row's key and value into the lane's ring (keys, values [window, width], updated in place) and its
 * attention output into out [.., width] at the same row.
 */
export function referenceAttend(
  out: Float32Array,
  qkv: Float32Array,
  firstRow: number,
  rows: number,
  start: number,
  keys: Float32Array,
  values: Float32Array,
  geometry: AttentionGeometry,
): void {
  const { heads, headDim, window } = geometry;
  const width = heads * headDim;
  const scores = new Float64Array(window);
  const sums = new Float64Array(headDim);
  const scale = 1 / Math.sqrt(headDim);
  for (let row = 0; row < rows; row++) {
    const position = start + row;
    const rowBase = (firstRow + row) * 3 * width;
    const slot = (position % window) * width;
    keys.set(qkv.subarray(rowBase + width, rowBase + 2 * width), slot);
    values.set(qkv.subarray(rowBase + 2 * width, rowBase + 3 * width), slot);
    const first = Math.max(0, position - window + 1);
    const count = position - first + 1;
    for (let head = 0; head < heads; head++) {
      const queryBase = rowBase + head * headDim;
      let maximum = Number.NEGATIVE_INFINITY;
      for (let j = 0; j < count; j++) {
        const keyBase = ((first + j) % window) * width + head * headDim;
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += qkv[queryBase + d]! * keys[keyBase + d]!;
        scores[j] = dot * scale;
        if (scores[j]! > maximum) maximum = scores[j]!;
      }
      let total = 0;
      for (let j = 0; j < count; j++) {
        scores[j] = Math.exp(scores[j]! - maximum);
        total += scores[j]!;
      }
      sums.fill(0);
      for (let j = 0; j < count; j++) {
        const valueBase = ((first + j) % window) * width + head * headDim;
        const probability = scores[j]! / total;
        for (let d = 0; d < headDim; d++) sums[d]! += probability * values[valueBase + d]!;
      }
      for (let d = 0; d < headDim; d++) out[(firstRow + row) * width + head * headDim + d] = sums[d]!;
    }
  }
}

/** The layer's SwiGLU line: out[r, i] = fround(silu(gate)) · up from gateUp [rows, 2·intermediate] = [gate | up]. */
export function referenceSwiGlu(gateUp: Float32Array, rows: number, intermediate: number): Float32Array {
  const out = new Float32Array(rows * intermediate);
  for (let row = 0; row < rows; row++) {
    for (let i = 0; i < intermediate; i++) {
      const value = gateUp[row * 2 * intermediate + i]!;
      const up = gateUp[row * 2 * intermediate + intermediate + i]!;
      out[row * intermediate + i] = Math.fround(value / (1 + Math.exp(-value))) * up;
    }
  }
  return out;
}
