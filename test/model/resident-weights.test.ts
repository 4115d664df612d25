// Loading the tiny checkpoint keeps every weight in its checkpoint dtype: bf16 as 16-bit words, e4m3 as bytes with
// their f32 block scales, f32 as f32; the bytes the model holds for weights equal the checkpoint's tensor bytes
// (less the lm_head rows outside the candidates, which are never read) within 2%, and the tensors by dtype match.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuTensor } from '../../src/backend/cpu/tensors.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { tensorByteLength } from '../../src/checkpoint/tensor.ts';
import { backboneNames, detectBackbonePrefix } from '../../src/model/weights.ts';
import { loadTinyModel, tinyCheckpointDir } from './tiny-checkpoint.ts';

const STORAGE = { bf16: Uint16Array, f16: Uint16Array, e4m3: Uint8Array, f32: Float32Array, i32: Int32Array } as const;
const FILE_DTYPES = { bf16: 'BF16', f16: 'F16', e4m3: 'F8_E4M3', f32: 'F32', i32: 'I32' } as const;

/** Every distinct tensor reachable from `value` (a tensor's scales count as their own tensor). */
function collectTensors(value: unknown, found: Set<CpuTensor>): void {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return;
  const candidate = value as Partial<CpuTensor>;
  if (typeof candidate.dtype === 'string' && Array.isArray(candidate.shape) && ArrayBuffer.isView(candidate.data)) {
    found.add(value as CpuTensor);
    if (candidate.scales !== undefined) found.add(candidate.scales as CpuTensor);
    return;
  }
  for (const item of Object.values(value)) collectTensors(item, found);
}

test('resident weight bytes equal the checkpoint tensor bytes; every weight keeps its dtype', async () => {
  const model = await loadTinyModel();
  const { backbone, tower } = model;
  const weights = new Set<CpuTensor>();
  collectTensors([backbone.layers, backbone.tokenEmbeddings, backbone.finalNorm, backbone.candidateHead], weights);
  collectTensors([tower.layers, tower.codeEmbeddings, model.codeEmbeddings], weights);
  const checkpoint = await SafetensorsCheckpoint.open(await tinyCheckpointDir());
  try {
    const names = [...checkpoint.names()];
    const lmHead = checkpoint.info(backboneNames(detectBackbonePrefix(names)).lmHead);
    let fileBytes = 0;
    const fileCounts: Record<string, number> = {};
    for (const name of names) {
      const info = checkpoint.info(name);
      fileBytes += tensorByteLength(info.dtype, info.shape);
      fileCounts[info.dtype] = (fileCounts[info.dtype] ?? 0) + 1;
    }
    const keptHead = tensorByteLength(lmHead.dtype, [model.candidates.ids.length, lmHead.shape[1]!]);
    const expected = fileBytes - tensorByteLength(lmHead.dtype, lmHead.shape) + keptHead;
    let resident = 0;
    const residentCounts: Record<string, number> = {};
    for (const tensor of weights) {
      assert.ok(tensor.data instanceof STORAGE[tensor.dtype], `a ${tensor.dtype} weight is stored as ${tensor.data}`);
      resident += tensor.data.byteLength;
      const fileDtype = FILE_DTYPES[tensor.dtype];
      residentCounts[fileDtype] = (residentCounts[fileDtype] ?? 0) + 1;
    }
    assert.ok(Math.abs(resident - expected) <= 0.02 * expected, `resident ${resident} bytes, checkpoint ${expected}`);
    assert.deepEqual(residentCounts, fileCounts);
    // The widened fp32 copies of matrices are a separate, stated budget (widened-cache.ts).
    const { widened } = model.backend as CpuBackend;
    assert.ok(widened.bytes <= widened.capacityBytes);
    console.log(
      `resident weights ${resident} bytes; checkpoint tensors ${fileBytes} bytes (${expected} read); ` +
        `widened copies ${widened.bytes} of ${widened.capacityBytes} bytes`,
    );
  } finally {
    await checkpoint.close();
  }
});
