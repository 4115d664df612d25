// The model hands each mixer's, tower attention's and tower MLP's residual add and the norm after it to the block
// call itself (the Backend's ResidualNorm epilogue), so a backend can fold them into the block's output projection;
// only the MoE's residual adds stay separate calls. On the cpu the epilogue is that separate call, so frames are
// unchanged by construction (the exactness tests beside this one hold them).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer, CpuTensor } from '../../src/backend/cpu/tensors.ts';
import type {
  AttentionWeights,
  CallTables,
  DeltaNetSlab,
  DeltaNetWeights,
  KeyValueSlab,
  MoeWeights,
  ResidualNorm,
  SwiGluWeights,
} from '../../src/backend/types.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { samplePrompt, tinyCheckpointDir } from './tiny-checkpoint.ts';

class RoutingBackend extends CpuBackend {
  readonly blocks: { readonly block: string; readonly epilogue: boolean }[] = [];
  moeCalls = 0;
  separateNorms = 0;
  private insideBlock = false;

  override attention(
    weights: AttentionWeights<CpuBuffer>,
    x: CpuBuffer,
    slab: KeyValueSlab<CpuBuffer>,
    tables: CallTables<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
    epilogue?: ResidualNorm<CpuBuffer>,
  ): void {
    this.block('attention', epilogue, () => super.attention(weights, x, slab, tables, out, rows, epilogue));
  }

  override deltaNet(
    weights: DeltaNetWeights<CpuBuffer>,
    x: CpuBuffer,
    slab: DeltaNetSlab<CpuBuffer>,
    tables: CallTables<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
    epilogue?: ResidualNorm<CpuBuffer>,
  ): void {
    this.block('deltaNet', epilogue, () => super.deltaNet(weights, x, slab, tables, out, rows, epilogue));
  }

  override swiGlu(
    weights: SwiGluWeights<CpuBuffer>,
    x: CpuBuffer,
    out: CpuBuffer,
    rows: number,
    epilogue?: ResidualNorm<CpuBuffer>,
  ): void {
    this.block('swiGlu', epilogue, () => super.swiGlu(weights, x, out, rows, epilogue));
  }

  override moe(weights: MoeWeights<CpuBuffer>, x: CpuBuffer, out: CpuBuffer, rows: number): void {
    this.moeCalls += 1;
    super.moe(weights, x, out, rows);
  }

  override addZeroCentredRmsNorm(
    x: CpuBuffer,
    source: CpuBuffer,
    weight: CpuTensor,
    out: CpuBuffer,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    if (!this.insideBlock) this.separateNorms += 1;
    super.addZeroCentredRmsNorm(x, source, weight, out, rows, cols, eps);
  }

  private block(block: string, epilogue: ResidualNorm<CpuBuffer> | undefined, run: () => void): void {
    this.blocks.push({ block, epilogue: epilogue !== undefined });
    this.insideBlock = true;
    try {
      run();
    } finally {
      this.insideBlock = false;
    }
  }
}

test("every mixer, tower attention and tower MLP call carries its residual add and norm; only the MoE's are separate", async () => {
  const backend = new RoutingBackend();
  const model = await loadSpeechModel(await tinyCheckpointDir(), backend);
  const prompt = samplePrompt(model.candidates.semanticBegin);
  backend.blocks.length = 0;
  backend.moeCalls = 0;
  backend.separateNorms = 0;
  const { frames } = generateFrames(model, prompt, {
    sampling: { ...DEFAULT_SAMPLING, seed: 5 },
    maxFrames: 3,
    prefillChunk: 64,
  });
  assert.ok(frames.length > 0);
  for (const block of ['attention', 'deltaNet', 'swiGlu']) {
    assert.ok(
      backend.blocks.some((call) => call.block === block),
      `the model ran ${block}`,
    );
  }
  const without = backend.blocks.filter((call) => !call.epilogue).map((call) => call.block);
  assert.deepEqual(without, [], 'block calls without an epilogue');
  assert.equal(backend.separateNorms, backend.moeCalls, 'one separate residual add and norm per MoE call');
});
