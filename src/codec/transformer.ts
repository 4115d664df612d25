// The codec's causal windowed transformer (post-module, pre-module, last encoder block), streamed: activations enter
// and leave channels-first [C, T]; inside, rows are [T, C]. Each layer keeps the keys and values of its last `window`
// rows in a ring, so row p attends to rows max(0, p − window + 1) … p in ascending order whatever the chunking.
// Layer: h = x + γa · wo(attention(rmsNorm(x))); x = h + γf · w2(silu(w1 n) · w3 n), n = rmsNorm(h); final rmsNorm.
// Attention: wqkv rows are [q heads | k heads | v heads], interleaved RoPE (pairs 2i, 2i+1), scale 1/sqrt(headDim).
// RoPE positions are absolute (0 at the stream's first row), as in one whole pass.
import type { CodecTransformerConfig } from './config.ts';
import { linear, rmsNorm, transpose } from './rows.ts';
import type { ScratchArena } from './scratch.ts';
import { type CodecWeights, weight } from './weights.ts';

interface LayerWeights {
  readonly wqkv: Float32Array;
  readonly wo: Float32Array;
  readonly w1: Float32Array;
  readonly w2: Float32Array;
  readonly w3: Float32Array;
  readonly attentionNorm: Float32Array;
  readonly ffnNorm: Float32Array;
  readonly attentionScale: Float32Array;
  readonly ffnScale: Float32Array;
}

export interface TransformerWeights {
  readonly config: CodecTransformerConfig;
  readonly layers: readonly LayerWeights[];
  readonly norm: Float32Array;
  /** The checkpoint's RoPE table (cos, sin) when it has one. [positions, headDim/2, 2] */
  readonly ropeTable: Float32Array | undefined;
}

export function transformerWeights(
  weights: CodecWeights,
  prefix: string,
  config: CodecTransformerConfig,
): TransformerWeights {
  const layers: LayerWeights[] = [];
  for (let layer = 0; layer < config.layers; layer++) {
    const layerPrefix = `${prefix}.layers.${layer}`;
    layers.push({
      wqkv: weight(weights, `${layerPrefix}.attention.wqkv.weight`),
      wo: weight(weights, `${layerPrefix}.attention.wo.weight`),
      w1: weight(weights, `${layerPrefix}.feed_forward.w1.weight`),
      w2: weight(weights, `${layerPrefix}.feed_forward.w2.weight`),
      w3: weight(weights, `${layerPrefix}.feed_forward.w3.weight`),
      attentionNorm: weight(weights, `${layerPrefix}.attention_norm.weight`),
      ffnNorm: weight(weights, `${layerPrefix}.ffn_norm.weight`),
      attentionScale: weight(weights, `${layerPrefix}.attention_layer_scale.gamma`),
      ffnScale: weight(weights, `${layerPrefix}.ffn_layer_scale.gamma`),
    });
  }
  return {
    config,
    layers,
    norm: weight(weights, `${prefix}.norm.weight`),
    ropeTable: weights.get(`${prefix}.freqs_cis`),
  };
}

/** The attention geometry the arithmetic below reads (a CodecTransformerConfig has it). */
export interface AttentionGeometry {
  readonly heads: number;
  readonly headDim: number;
  readonly window: number;
  readonly ropeBase: number;
}

/**
 * Rotates interleaved pairs of each head of `row` (heads × headDim values at `offset`) by position `position`: the
 * checkpoint's table where it covers the position, else cos/sin of position / base^(2i/headDim) rounded to float32.
 */
export function applyRope(
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

/** RoPE on q and k of `rows` qkv rows [.., 3·width] from row `firstRow`, row r at position start + r. */
export function ropeRows(
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
    applyRope(qkv, rowBase, geometry, start + row, table);
    applyRope(qkv, rowBase + width, geometry, start + row, table);
  }
}

/**
 * One lane's attention over `rows` rows of qkv (already rotated) from row `firstRow`, row r at position start + r:
 * each row's key and value go into the lane's ring (keys, values [window, width], ring-indexed by position %
 * window) first, then its output [.., width] at the same row. Scores and sums in float64, one rounding at the end.
 */
export function attendRows(
  out: Float32Array,
  qkv: Float32Array,
  firstRow: number,
  rows: number,
  start: number,
  keys: Float32Array,
  values: Float32Array,
  geometry: AttentionGeometry,
  scores: Float64Array = new Float64Array(geometry.window),
  sums: Float64Array = new Float64Array(geometry.headDim),
): void {
  const { heads, headDim, window } = geometry;
  const width = heads * headDim;
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

export class WindowedTransformer {
  /** Per layer: keys and values of the last `window` rows, ring-indexed by position % window. [window, heads·headDim] */
  private readonly keys: Float32Array[];
  private readonly values: Float32Array[];
  private position = 0;

  constructor(private readonly weights: TransformerWeights) {
    const { window, heads, headDim } = weights.config;
    this.keys = weights.layers.map(() => new Float32Array(window * heads * headDim));
    this.values = weights.layers.map(() => new Float32Array(window * heads * headDim));
  }

  /** x [dim, rows] → [dim, rows]. */
  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const { dim, normEps } = this.weights.config;
    let hidden = transpose(x, dim, rows, scratch);
    this.weights.layers.forEach((layer, index) => {
      hidden = this.layer(hidden, rows, layer, index, scratch);
    });
    this.position += rows;
    const normed = rmsNorm(hidden, rows, dim, this.weights.norm, normEps, scratch);
    return transpose(normed, rows, dim, scratch);
  }

  private layer(
    x: Float32Array,
    rows: number,
    layer: LayerWeights,
    index: number,
    scratch: ScratchArena,
  ): Float32Array {
    const { dim, heads, headDim, intermediate, normEps } = this.weights.config;
    const width = heads * headDim;
    const attentionInput = rmsNorm(x, rows, dim, layer.attentionNorm, normEps, scratch);
    const qkv = linear(attentionInput, rows, dim, 3 * width, layer.wqkv, undefined, scratch);
    const attended = this.attend(qkv, rows, index, scratch);
    const attentionOut = linear(attended, rows, width, dim, layer.wo, undefined, scratch);
    const afterAttention = scratch.take(rows * dim);
    for (let i = 0; i < rows * dim; i++) afterAttention[i] = x[i]! + attentionOut[i]! * layer.attentionScale[i % dim]!;
    const ffnInput = rmsNorm(afterAttention, rows, dim, layer.ffnNorm, normEps, scratch);
    const gate = linear(ffnInput, rows, dim, intermediate, layer.w1, undefined, scratch);
    const up = linear(ffnInput, rows, dim, intermediate, layer.w3, undefined, scratch);
    for (let i = 0; i < gate.length; i++) {
      const value = gate[i]!;
      gate[i] = Math.fround(value / (1 + Math.exp(-value))) * up[i]!;
    }
    const ffnOut = linear(gate, rows, intermediate, dim, layer.w2, undefined, scratch);
    const out = scratch.take(rows * dim);
    for (let i = 0; i < rows * dim; i++) out[i] = afterAttention[i]! + ffnOut[i]! * layer.ffnScale[i % dim]!;
    return out;
  }

  /** qkv [rows, 3·width] → attention output [rows, width]; writes each row's key and value into the ring first. */
  private attend(qkv: Float32Array, rows: number, layerIndex: number, scratch: ScratchArena): Float32Array {
    const { config, ropeTable } = this.weights;
    const out = scratch.take(rows * config.heads * config.headDim);
    ropeRows(qkv, 0, rows, this.position, config, ropeTable);
    const ring = { keys: this.keys[layerIndex]!, values: this.values[layerIndex]! };
    const scores = scratch.takeDouble(config.window);
    const sums = scratch.takeDouble(config.headDim);
    attendRows(out, qkv, 0, rows, this.position, ring.keys, ring.values, config, scores, sums);
    return out;
  }
}
