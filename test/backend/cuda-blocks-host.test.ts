// The cuda attention and Gated DeltaNet blocks' host side, without a GPU: geometry the kernels cannot serve is
// refused by name before anything is projected or launched, and the backbone's, the tower's and the DeltaNet's
// geometries reach the kernels with the arguments kernels/cuda/{attention,delta_net,rms_norm}.cu declare, and the
// projections that share x go out as one segmented GEMM (support/recording-blocks.ts: launches recorded, nothing run).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeHeadsPerBlock,
  PREPARE_IN_PROJECTION_MOST_ROWS,
  runAttention,
} from '../../src/backend/cuda/attention-block.ts';
import type { BlockContext } from '../../src/backend/cuda/block-context.ts';
import { COMBINE_IN_PROJECTION_MOST_ROWS, runDeltaNet } from '../../src/backend/cuda/delta-net-block.ts';
import { runSwiGlu } from '../../src/backend/cuda/swiglu-block.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import type {
  AttentionWeights,
  CallTables,
  DeltaNetSlab,
  DeltaNetWeights,
  DType,
  KeyValueSlab,
} from '../../src/backend/types.ts';
import {
  buffer,
  dtypeRefusal,
  gemmLaunches,
  int32At,
  type Launched,
  launchingContext,
  recordingContext,
  tensor,
  untouchable,
  word,
} from './support/recording-blocks.ts';

const HIDDEN = 2048;

function attentionWeights(overrides: Partial<AttentionWeights<CudaBuffer>> = {}): AttentionWeights<CudaBuffer> {
  const heads = overrides.heads ?? 16;
  const keyValueHeads = overrides.keyValueHeads ?? 2;
  const headDim = overrides.headDim ?? 256;
  const outputGate = overrides.outputGate ?? true;
  return {
    heads,
    keyValueHeads,
    headDim,
    rotaryDim: 64,
    ropeTheta: 1e7,
    ropeStyle: 'neox',
    outputGate,
    eps: 1e-6,
    qProj: tensor('bf16', [heads * headDim * (outputGate ? 2 : 1), HIDDEN]),
    kProj: tensor('bf16', [keyValueHeads * headDim, HIDDEN]),
    vProj: tensor('bf16', [keyValueHeads * headDim, HIDDEN]),
    oProj: tensor('bf16', [HIDDEN, heads * headDim]),
    qNorm: tensor('bf16', [headDim]),
    kNorm: tensor('bf16', [headDim]),
    ...overrides,
  };
}

function keyValueSlab(keyValueHeads: number, headDim: number, slots = 4, capacity = 3000): KeyValueSlab<CudaBuffer> {
  return {
    keys: tensor('bf16', [slots, capacity, keyValueHeads, headDim]),
    values: tensor('bf16', [slots, capacity, keyValueHeads, headDim]),
  };
}

function callTables(rows: number, sequenceCount: number): CallTables<CudaBuffer> {
  return { rows: buffer('i32', 2 * rows), sequences: buffer('i32', 4 * sequenceCount), sequenceCount };
}

function refusal(code: string, param: string) {
  return (error: unknown) => {
    const named = error as { code?: string; param?: string };
    return named.code === code && named.param === param;
  };
}

test('attention refuses geometry its kernels cannot serve, by name, before any work', () => {
  const x = buffer('bf16', HIDDEN);
  const out = buffer('bf16', HIDDEN);
  const tables = callTables(1, 1);
  const attempt = (
    weights: AttentionWeights<CudaBuffer>,
    slab = keyValueSlab(weights.keyValueHeads, weights.headDim),
  ) => runAttention(untouchable, weights, x, slab, tables, out, 1);
  const unsupported = (param: string) => refusal('KERNEL_GEOMETRY_UNSUPPORTED', param);
  // The tiny preset's head dim.
  assert.throws(() => attempt(attentionWeights({ headDim: 16, rotaryDim: 8 })), unsupported('headDim'));
  assert.throws(() => attempt(attentionWeights({ heads: 3 })), unsupported('heads'));
  assert.throws(() => attempt(attentionWeights({ heads: 66 })), unsupported('heads'));
  assert.throws(() => attempt(attentionWeights({ rotaryDim: 63 })), unsupported('rotaryDim'));
  assert.throws(() => attempt(attentionWeights({ rotaryDim: 512 })), unsupported('rotaryDim'));
  assert.throws(() => attempt(attentionWeights({ qProj: tensor('bf16', [16 * 256, HIDDEN]) })), unsupported('qProj'));
  assert.throws(() => attempt(attentionWeights(), keyValueSlab(2, 128)), unsupported('keys'));
  assert.throws(() => attempt(attentionWeights({ qNorm: tensor('f32', [256]) })), dtypeRefusal);
});

test('backbone attention: q|gate, k, v projections, prepare (gated, NeoX), gated attention read in place, o_proj', () => {
  const { ctx, launched, calls, names } = recordingContext();
  const weights = attentionWeights();
  names.set(weights.qProj, 'q').set(weights.kProj, 'k').set(weights.vProj, 'v').set(weights.oProj, 'o');
  const slab = keyValueSlab(2, 256);
  const x = buffer('bf16', 3 * HIDDEN);
  const out = buffer('bf16', 3 * HIDDEN);
  const tables = callTables(3, 1);
  runAttention(ctx, weights, x, slab, tables, out, 3);
  assert.deepEqual(
    calls.map((call) => call.linear),
    ['q', 'k', 'v', 'o'],
  );
  assert.deepEqual(
    calls.map((call) => call.fused),
    ['q', 'q', 'q', undefined],
    'q, k and v in one fused linear',
  );
  assert.equal(calls[3]!.out, out.pointer);
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['attention_prepare_bf16', 'attention_few_rows_bf16_d256', 'attention_combine_bf16_d256'],
    'a call of 3 rows: the few-rows walk',
  );
  const [prepare, main] = launched as [Launched, Launched];
  const [projected, key, value] = [calls[0]!.out, calls[1]!.out, calls[2]!.out];
  assert.deepEqual([word(prepare, 1), word(prepare, 2)], [slab.keys.data.pointer, slab.values.data.pointer]);
  assert.deepEqual([word(prepare, 3), word(prepare, 4), word(prepare, 5)], [projected, key, value]);
  assert.equal(word(prepare, 8), tables.rows.pointer);
  assert.deepEqual(
    [9, 10, 11, 12, 13, 15, 16, 17, 18].map((index) => int32At(prepare, index)),
    [3, 16, 2, 256, 64, 0, 1, 4, 3000],
    'rows, heads, kv heads, head dim, rotary dims, NeoX, gated, slots, capacity',
  );
  assert.equal(word(main, 2), word(prepare, 0), 'attention reads the prepared q');
  assert.equal(word(main, 3), projected + 512n, 'the gate is the second half of each head of q_proj');
  assert.deepEqual([word(main, 4), word(main, 5)], [8192n, 512n], 'gate row and head strides');
  assert.equal(calls[3]!.x, word(main, 0), 'o_proj reads the gated attention');
});

test('tower attention: no gate, interleaved RoPE, a large call folds on chip', () => {
  const { ctx, launched } = recordingContext();
  const weights = attentionWeights({ outputGate: false, ropeStyle: 'interleaved' });
  runAttention(
    ctx,
    weights,
    buffer('bf16', 100 * HIDDEN),
    keyValueSlab(2, 256),
    callTables(100, 1),
    buffer('bf16', 100 * HIDDEN),
    100,
  );
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['attention_prepare_bf16', 'attention_grouped_bf16_d256'],
  );
  assert.deepEqual([int32At(launched[0]!, 15), int32At(launched[0]!, 16)], [1, 0], 'interleaved, not gated');
  assert.equal(word(launched[1]!, 3), 0n, 'no gate');
});

test("decode attention deals each KV head's query heads to blocks of at most 4; prefill keeps the group a block", () => {
  const attentionShape = (rows: number, sequences: number, heads = 16, keyValueHeads = 2) => {
    const { ctx, launched } = recordingContext();
    const weights = attentionWeights({ heads, keyValueHeads });
    const x = buffer('bf16', rows * HIDDEN);
    const slab = keyValueSlab(keyValueHeads, 256);
    runAttention(ctx, weights, x, slab, callTables(rows, sequences), buffer('bf16', rows * HIDDEN), rows);
    const { grid, block } = launched[1]!.shape;
    return [grid[1], block[0]];
  };
  assert.deepEqual(attentionShape(5, 5), [4, 128], 'the backbone: 2 blocks of 4 heads a KV head');
  assert.deepEqual(attentionShape(5, 5, 6, 2), [2, 96], 'a group of 3: a block of 3');
  assert.deepEqual(attentionShape(5, 5, 12, 2), [4, 96], 'a group of 6: 2 blocks of 3');
  assert.deepEqual(attentionShape(3, 3), [8, 256], 'the few-rows walk: 4 blocks of 2 heads, 4 warps a head');
  assert.deepEqual(attentionShape(100, 1), [2, 256], 'a prefill of 100 rows (the grouped kernel): a block a KV head');
  assert.deepEqual([1, 2, 3, 4, 5, 6, 8, 16].map(decodeHeadsPerBlock), [1, 2, 3, 4, 1, 3, 4, 4]);
});

/** The real launchers' launch names for one attention block of `rows` rows in `sequences` sequences. */
function attentionLaunchNames(rows: number, sequences: number, outputGate = true): string[] {
  const { ctx, launched } = launchingContext('fused');
  const weights = attentionWeights({ outputGate });
  const x = buffer('bf16', rows * HIDDEN);
  runAttention(ctx, weights, x, keyValueSlab(2, 256), callTables(rows, sequences), buffer('bf16', rows * HIDDEN), rows);
  return launched.map((launch) => launch.name);
}

test("attention: a call of few rows runs its prepare in the split q|k|v projection's combine, wider calls apart", () => {
  const most = PREPARE_IN_PROJECTION_MOST_ROWS;
  const fused = attentionLaunchNames(most, most);
  assert.ok(fused.includes('attention_qkv_prepare_bf16'), `fused: ${fused.join(', ')}`);
  assert.ok(!fused.includes('gemm_segments_combine'), 'no combine of its own');
  assert.ok(!fused.includes('attention_prepare_bf16'), 'no prepare of its own');
  assert.ok(attentionLaunchNames(1, 1, false).includes('attention_qkv_prepare_bf16'), 'without a gate too');
  // One row more still splits K (every decode bucket of this geometry does), and runs the two launches.
  const apart = attentionLaunchNames(most + 1, most + 1);
  assert.deepEqual(
    apart.filter((name) => name === 'gemm_segments_combine' || name.startsWith('attention_prepare')),
    ['gemm_segments_combine', 'attention_prepare_bf16'],
    'past the most rows, the combine, then the prepare',
  );
  assert.deepEqual(
    fused.filter((name) => !name.startsWith('attention_')),
    apart.filter((name) => !name.startsWith('attention_') && name !== 'gemm_segments_combine'),
    'the projection and the output projection launch alike',
  );
});

const KEY_HEADS = 16;
const VALUE_HEADS = 32;
const CHANNELS = 2 * KEY_HEADS * 128 + VALUE_HEADS * 128;

function deltaNetWeights(overrides: Partial<DeltaNetWeights<CudaBuffer>> = {}, parameterDtype: DType = 'bf16') {
  const weights: DeltaNetWeights<CudaBuffer> = {
    keyHeads: KEY_HEADS,
    valueHeads: VALUE_HEADS,
    keyDim: 128,
    valueDim: 128,
    convKernel: 4,
    eps: 1e-6,
    inProjQkv: tensor('bf16', [CHANNELS, HIDDEN]),
    inProjZ: tensor('bf16', [VALUE_HEADS * 128, HIDDEN]),
    inProjB: tensor('bf16', [VALUE_HEADS, HIDDEN]),
    inProjA: tensor('bf16', [VALUE_HEADS, HIDDEN]),
    outProj: tensor('bf16', [HIDDEN, VALUE_HEADS * 128]),
    conv: tensor('bf16', [CHANNELS, 1, 4]),
    aLog: tensor(parameterDtype, [VALUE_HEADS]),
    dtBias: tensor(parameterDtype, [VALUE_HEADS]),
    norm: tensor('bf16', [128]),
    ...overrides,
  };
  return weights;
}

function deltaNetSlab(slots = 4, valueHeads = VALUE_HEADS, channels = CHANNELS): DeltaNetSlab<CudaBuffer> {
  return { conv: tensor('bf16', [slots, 3, channels]), recurrent: tensor('f32', [slots, valueHeads, 128, 128]) };
}

test('Gated DeltaNet refuses geometry its kernels cannot serve, by name, before any work', () => {
  const attempt = (weights: DeltaNetWeights<CudaBuffer>, slab = deltaNetSlab()) =>
    runDeltaNet(untouchable, weights, buffer('bf16', HIDDEN), slab, callTables(1, 1), buffer('bf16', HIDDEN), 1);
  const unsupported = (param: string) => refusal('KERNEL_GEOMETRY_UNSUPPORTED', param);
  // The tiny preset's head dims.
  assert.throws(() => attempt(deltaNetWeights({ keyDim: 16 })), unsupported('keyDim'));
  assert.throws(() => attempt(deltaNetWeights({ valueDim: 64 })), unsupported('valueDim'));
  assert.throws(() => attempt(deltaNetWeights({ convKernel: 3 })), unsupported('convKernel'));
  assert.throws(() => attempt(deltaNetWeights({ valueHeads: 24 })), unsupported('valueHeads'));
  assert.throws(() => attempt(deltaNetWeights({ conv: tensor('bf16', [CHANNELS, 1, 3]) })), unsupported('conv'));
  assert.throws(() => attempt(deltaNetWeights(), deltaNetSlab(4, 16)), unsupported('recurrent slab'));
  // A_log and dt_bias of different dtypes, and an fp32 output-norm weight (the norm kernel reads bf16).
  assert.throws(() => attempt(deltaNetWeights({ aLog: tensor('f32', [VALUE_HEADS]) })), dtypeRefusal);
  assert.throws(() => attempt(deltaNetWeights({ norm: tensor('f32', [128]) })), dtypeRefusal);
});

test('Gated DeltaNet: four projections, conv over q|k|v, gates, recurrence, gated norm per value head, out_proj', () => {
  const { ctx, launched, calls, names } = recordingContext();
  const weights = deltaNetWeights();
  names.set(weights.inProjQkv, 'qkv').set(weights.inProjZ, 'z').set(weights.inProjB, 'b').set(weights.inProjA, 'a');
  names.set(weights.outProj, 'out');
  const slab = deltaNetSlab();
  const rows = 5;
  const tables = callTables(rows, 3);
  const out = buffer('bf16', rows * HIDDEN);
  runDeltaNet(ctx, weights, buffer('bf16', rows * HIDDEN), slab, tables, out, rows);
  assert.deepEqual(
    calls.map((call) => call.linear),
    ['qkv', 'z', 'b', 'a', 'out'],
  );
  assert.deepEqual(
    calls.map((call) => call.fused),
    ['qkv', 'qkv', 'qkv', 'qkv', undefined],
    'the four input projections in one fused linear',
  );
  assert.equal(calls[4]!.out, out.pointer);
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['delta_net_gates_bf16_parameters', 'delta_net_conv_silu_bf16', 'delta_net_recurrence_bf16', 'rms_norm_gated_bf16'],
  );
  const [gates, conv, recurrence, norm] = launched as [Launched, Launched, Launched, Launched];
  assert.deepEqual(
    launched.map((launch) => launch.side === true),
    [true, false, false, false],
    'the gates run on the side stream beside the conv; the recurrence waits for both',
  );
  const [mixed, z, b, a] = calls.map((call) => call.out);
  // conv: out, out stride, x, x stride, weight, state, sequences, channels.
  assert.deepEqual([word(conv, 1), word(conv, 2), word(conv, 3)], [BigInt(CHANNELS), mixed, BigInt(CHANNELS)]);
  assert.deepEqual(
    [word(conv, 4), word(conv, 5), word(conv, 6)],
    [weights.conv.data.pointer, slab.conv.data.pointer, tables.sequences.pointer],
  );
  assert.deepEqual(conv.shape.grid, [CHANNELS / 256, 1, 3], 'three sequences of five rows: none longer than three');
  // gates: g, beta, b, a, row stride, A_log, dt_bias, rows, value heads.
  assert.deepEqual([word(gates, 2), word(gates, 3), word(gates, 4)], [b, a, BigInt(VALUE_HEADS)]);
  assert.deepEqual([word(gates, 5), word(gates, 6)], [weights.aLog.data.pointer, weights.dtBias.data.pointer]);
  assert.deepEqual([int32At(gates, 7), int32At(gates, 8)], [rows, VALUE_HEADS]);
  // recurrence: out, qkv, stride, g, beta, state, sequences, key heads, value heads.
  assert.deepEqual([word(recurrence, 1), word(recurrence, 2)], [word(conv, 0), BigInt(CHANNELS)]);
  assert.deepEqual([word(recurrence, 3), word(recurrence, 4)], [word(gates, 0), word(gates, 1)]);
  assert.equal(word(recurrence, 5), slab.recurrent.data.pointer);
  assert.deepEqual(recurrence.shape.grid, [4, VALUE_HEADS, 3]);
  // gated norm: out, x, gate, weight, rows, cols.
  assert.deepEqual([word(norm, 1), word(norm, 2), word(norm, 3)], [word(recurrence, 0), z, weights.norm.data.pointer]);
  assert.deepEqual([int32At(norm, 4), int32At(norm, 5)], [rows * VALUE_HEADS, 128], 'one row per value head');
  assert.equal(calls[4]!.x, word(norm, 0), 'out_proj reads the gated norm');
});

test('Gated DeltaNet with fp32 A_log and dt_bias runs the fp32-parameter gates', () => {
  const { ctx, launched } = recordingContext();
  const weights = deltaNetWeights({}, 'f32');
  runDeltaNet(ctx, weights, buffer('bf16', HIDDEN), deltaNetSlab(), callTables(1, 1), buffer('bf16', HIDDEN), 1);
  assert.equal(launched[0]!.name, 'delta_net_gates_f32');
});

/** The real launchers' launches of one DeltaNet block of `rows` rows in `sequences` sequences. */
function deltaNetLaunches(rows: number, sequences: number, parameterDtype: DType = 'bf16') {
  const { ctx, launched } = launchingContext('fused');
  const weights = deltaNetWeights({}, parameterDtype);
  const slab = deltaNetSlab();
  const tables = callTables(rows, sequences);
  runDeltaNet(ctx, weights, buffer('bf16', rows * HIDDEN), slab, tables, buffer('bf16', rows * HIDDEN), rows);
  return { launched, weights, slab, tables };
}

test("Gated DeltaNet decode of few rows: the projection's combine runs the conv and the gates", () => {
  {
    const rows = 3;
    const { launched, weights, slab, tables } = deltaNetLaunches(rows, rows);
    assert.deepEqual(
      launched.map((launch) => launch.name),
      [
        'gemm_segments_rows16k128_bf16',
        'delta_net_combine_bf16_parameters',
        'delta_net_recurrence_bf16',
        'rms_norm_gated_bf16',
        'gemm_rows16k128_bf16',
        'gemm_combine',
      ],
    );
    assert.ok(
      launched.every((launch) => launch.side !== true),
      'nothing beside: no fork and join',
    );
    const [segmented, combine, recurrence] = launched as [Launched, Launched, Launched];
    // The combine takes the segmented launch's 22 parameters, then its own 8.
    assert.equal(combine.parameters.length >= 30, true);
    for (let index = 0; index < 22; index++) {
      assert.equal(word(combine, index), word(segmented, index), `segment parameter ${index}`);
    }
    // convolved, conv weight, conv state, sequences, g, beta, A_log, dt_bias; the recurrence reads what it writes.
    assert.deepEqual(
      [word(combine, 22), word(combine, 23), word(combine, 24), word(combine, 25)],
      [word(recurrence, 1), weights.conv.data.pointer, slab.conv.data.pointer, tables.sequences.pointer],
    );
    assert.deepEqual([word(combine, 26), word(combine, 27)], [word(recurrence, 3), word(recurrence, 4)]);
    assert.deepEqual([word(combine, 28), word(combine, 29)], [weights.aLog.data.pointer, weights.dtBias.data.pointer]);
    assert.equal(word(recurrence, 2), BigInt(CHANNELS), 'the conv output is contiguous [rows, C]');
    // One thread per element of the split segments (all four at decode) and per (row, head) of the gates.
    const elements = rows * (CHANNELS + VALUE_HEADS * 128 + 2 * VALUE_HEADS) + rows * VALUE_HEADS;
    assert.deepEqual(combine.shape.grid, [Math.ceil(elements / 256), 1, 1]);
    assert.equal(deltaNetLaunches(1, 1, 'f32').launched[1]!.name, 'delta_net_combine_bf16');
    const most = COMBINE_IN_PROJECTION_MOST_ROWS;
    assert.equal(deltaNetLaunches(most, most).launched[1]!.name, 'delta_net_combine_bf16_parameters');
  }
});

test('Gated DeltaNet: the conv and gates run apart in decode calls past the most rows, and in prefill calls', () => {
  const apart = ['delta_net_gates_bf16_parameters', 'delta_net_conv_silu_bf16', 'delta_net_recurrence_bf16'];
  const names = (rows: number, sequences: number) =>
    deltaNetLaunches(rows, sequences)
      .launched.map((launch) => launch.name)
      .filter((name) => name.startsWith('delta_net'));
  // One row past the most: q|k|v still splits K (up to 16 rows here), so only the row limit keeps them apart.
  const wider = COMBINE_IN_PROJECTION_MOST_ROWS + 1;
  assert.deepEqual(names(wider, wider), apart);
  // Five rows in three sequences: a prefill call, whose conv reads rows of its own sequence.
  assert.deepEqual(names(5, 3), apart);
});

test('fused projections: one GEMM launch and at most one combine where each projection had its own two', () => {
  const count = (mode: 'fused' | 'separate', run: (ctx: BlockContext) => void) => {
    const { ctx, launched } = launchingContext(mode);
    run(ctx);
    return gemmLaunches(launched);
  };
  const deltaNet = (rows: number) => (ctx: BlockContext) =>
    runDeltaNet(
      ctx,
      deltaNetWeights(),
      buffer('bf16', rows * HIDDEN),
      deltaNetSlab(),
      callTables(rows, 1),
      buffer('bf16', rows * HIDDEN),
      rows,
    );
  const attention = (rows: number) => (ctx: BlockContext) =>
    runAttention(
      ctx,
      attentionWeights(),
      buffer('bf16', rows * HIDDEN),
      keyValueSlab(2, 256),
      callTables(rows, 1),
      buffer('bf16', rows * HIDDEN),
      rows,
    );
  const swiGlu = (rows: number) => (ctx: BlockContext) => {
    const weights = {
      gate: tensor('bf16', [6144, HIDDEN]),
      up: tensor('bf16', [6144, HIDDEN]),
      down: tensor('bf16', [HIDDEN, 6144]),
    };
    runSwiGlu(ctx, weights, buffer('bf16', rows * HIDDEN), buffer('bf16', rows * HIDDEN), rows);
  };
  // Decode: every projection splits K (in 128-element tiles here), so each separate linear was a GEMM and a combine.
  assert.deepEqual(count('separate', deltaNet(1)), Array(5).fill(['gemm_rows16k128_bf16', 'gemm_combine']).flat());
  // Fused, the in-projections' combine is the DeltaNet's or the attention's own launch (not a gemm launch).
  const fusedDecode = ['gemm_segments_rows16k128_bf16', 'gemm_rows16k128_bf16', 'gemm_combine'];
  assert.deepEqual(count('fused', deltaNet(1)), fusedDecode);
  assert.equal(count('separate', attention(1)).length, 8);
  assert.deepEqual(count('fused', attention(1)), fusedDecode);
  assert.equal(count('separate', swiGlu(1)).length, 6);
  // The SwiGLU's gate|up combine also computes h (swiglu_segments_combine_bf16, not a gemm launch); gate|up's 7-tile
  // chunks stage 64 K elements (rows16), the down projection's 6-tile ones 128.
  assert.deepEqual(count('fused', swiGlu(1)), ['gemm_segments_rows16_bf16', 'gemm_rows16k128_bf16', 'gemm_combine']);
  // Small batches take rows64 tiles, split, where the call is narrower than WIDE_CALL_COLUMNS (attention's 9216);
  // a wider call (DeltaNet's 12352) and prefill keep their chunks in registers and need no combine at all.
  assert.deepEqual(count('fused', attention(40)).slice(0, 2), ['gemm_segments_rows64_bf16', 'gemm_segments_combine']);
  assert.deepEqual(count('fused', deltaNet(40)).slice(0, 2), ['gemm_segments_rows96_bf16', 'gemm_rows64_bf16']);
  assert.deepEqual(count('separate', deltaNet(300)), Array(5).fill('gemm_rows96_bf16'));
  assert.deepEqual(count('fused', deltaNet(300)), ['gemm_segments_rows96_bf16', 'gemm_rows96_bf16']);
});

test('fused projections: the segmented launch carries each weight, output, width and its own K chunking', () => {
  const { ctx, launched } = launchingContext('fused');
  const weights = deltaNetWeights();
  runDeltaNet(ctx, weights, buffer('bf16', HIDDEN), deltaNetSlab(), callTables(1, 1), buffer('bf16', HIDDEN), 1);
  const [segmented, combine] = launched as [Launched, Launched];
  assert.equal(segmented.name, 'gemm_segments_rows16k128_bf16');
  const widths = [CHANNELS, VALUE_HEADS * 128, VALUE_HEADS, VALUE_HEADS];
  const projections = [weights.inProjQkv, weights.inProjZ, weights.inProjB, weights.inProjA];
  projections.forEach((projection, index) => {
    assert.equal(word(segmented, 7 + 4 * index), projection.data.pointer, `segment ${index} weight`);
    assert.equal(int32At(segmented, 8 + 4 * index), widths[index]);
  });
  // Over 2048 features (32 K tiles): 8192 columns split K 4 ways, 4096 columns 8 ways, the narrow ones 16 ways.
  assert.deepEqual(
    [0, 1, 2, 3].map((index) => int32At(segmented, 9 + 4 * index)),
    [8, 4, 2, 2],
  );
  const columnTiles = widths.reduce((sum, n) => sum + Math.ceil(n / 64), 0);
  assert.deepEqual(segmented.shape.grid, [columnTiles, 1, 16], 'all segments side by side, the most chunks deep');
  // A decode call of one row: the DeltaNet's own combine, which takes the segmented launch's table first.
  assert.equal(combine.name, 'delta_net_combine_bf16_parameters');
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((index) => word(combine, index)),
    [0, 1, 2, 3, 4, 5].map((index) => word(segmented, index)),
    'the combine takes the same parameters',
  );
});

test('a fused linear refuses weights of different widths of x, by name, before any launch', () => {
  const { ctx, launched } = launchingContext('fused');
  const x = buffer('bf16', HIDDEN);
  const segments = [
    { weight: tensor('bf16', [64, HIDDEN]), out: buffer('bf16', 64) },
    { weight: tensor('bf16', [64, HIDDEN + 8]), out: buffer('bf16', 64) },
  ];
  assert.throws(() => ctx.linears(x, segments, 1), refusal('TENSOR_SHAPE_MISMATCH', 'segments[1]'));
  const small = [
    { weight: tensor('bf16', [64, HIDDEN]), out: buffer('bf16', 64) },
    { ...segments[0]!, out: buffer('bf16', 8) },
  ];
  assert.throws(
    () => ctx.linears(x, small, 1),
    (error: unknown) => (error as { code?: string }).code === 'TENSOR_TOO_SMALL',
  );
  const fp8 = [{ weight: tensor('e4m3', [64, HIDDEN]), out: buffer('bf16', 64) }];
  assert.throws(() => ctx.linears(x, fp8, 1), refusal('LINEAR_WEIGHT_DTYPE_UNSUPPORTED', 'segments[0]'));
  assert.throws(
    () => ctx.linears(x, [], 1),
    (error: unknown) => (error as { code?: string }).code === 'LINEAR_SEGMENTS_INVALID',
  );
  assert.equal(launched.length, 0);
});

test('a SwiGLU whose GEMM splits K computes h in its combine; one that does not runs the SwiGLU kernel', () => {
  const weights = {
    gate: tensor('bf16', [6144, HIDDEN]),
    up: tensor('bf16', [6144, HIDDEN]),
    down: tensor('bf16', [HIDDEN, 6144]),
  };
  const run = (rows: number) => {
    const { ctx, launched } = launchingContext('fused');
    runSwiGlu(ctx, weights, buffer('bf16', rows * HIDDEN), buffer('bf16', rows * HIDDEN), rows);
    return launched;
  };
  const decode = run(1);
  assert.deepEqual(
    decode.map(({ name }) => name),
    ['gemm_segments_rows16_bf16', 'swiglu_segments_combine_bf16', 'gemm_rows16k128_bf16', 'gemm_combine'],
  );
  const [segmented, combine] = decode as [Launched, Launched];
  assert.deepEqual(
    Array.from({ length: 22 }, (_, index) => word(combine, index)),
    Array.from({ length: 22 }, (_, index) => word(segmented, index)),
    "the combine takes the tile kernel's parameters",
  );
  // h is written over the gate buffer (segment 0's output), which the down projection then reads.
  assert.equal(word(combine, 22), word(segmented, 6));
  assert.equal(word(decode[2]!, 1), word(combine, 22));
  // One thread per element of h: 6144 columns of one row.
  assert.deepEqual(combine.shape.grid, [6144 / 256, 1, 1]);
  // 17 to 64 rows of this 12288-column gate|up is a wide call: unsplit on rows96 tiles, then the SwiGLU kernel.
  assert.deepEqual(
    run(40).map(({ name }) => name),
    ['gemm_segments_rows96_bf16', 'swiglu_bf16', 'gemm_rows64_bf16', 'gemm_combine'],
  );
  assert.deepEqual(
    run(300).map(({ name }) => name),
    ['gemm_segments_rows96_bf16', 'swiglu_bf16', 'gemm_rows96_bf16'],
  );
});

test("a MoE shared expert's SwiGLU combine also combines the router logits and the shared gate beside it", () => {
  const { ctx, launched } = launchingContext('fused');
  const weights = {
    gate: tensor('bf16', [512, HIDDEN]),
    up: tensor('bf16', [512, HIDDEN]),
    down: tensor('bf16', [HIDDEN, 512]),
  };
  const logits = buffer('f32', 3 * 256);
  const sharedGate = buffer('bf16', 3);
  const alongside = [
    { weight: tensor('bf16', [256, HIDDEN]), out: logits, output: 'f32' as const },
    { weight: tensor('bf16', [1, HIDDEN]), out: sharedGate },
  ];
  runSwiGlu(ctx, weights, buffer('bf16', 3 * HIDDEN), buffer('bf16', 3 * HIDDEN), 3, alongside);
  const [segmented, combine] = launched as [Launched, Launched];
  assert.equal(combine.name, 'swiglu_segments_combine_bf16');
  assert.equal(word(combine, 14), logits.pointer);
  assert.equal(word(combine, 18), sharedGate.pointer);
  assert.equal(int32At(combine, 5), 0b0100, 'the router logits stay fp32');
  // Threads: h's 3 × 512, then the other split segments' elements (3 × 256 logits, 3 shared gates).
  const chunkTiles = [2, 3].map((index) => int32At(segmented, 9 + 4 * index));
  assert.ok(
    chunkTiles.every((tiles) => tiles < HIDDEN / 64),
    'both split K at 2048 features',
  );
  assert.deepEqual(combine.shape.grid, [Math.ceil((3 * 512 + 3 * 256 + 3) / 256), 1, 1]);
});
