// Every weight tensor a loaded speech model holds (backbone and tower, in field order, with its path), for tests that
// compare two loads of one checkpoint tensor by tensor.
import type { CudaBuffer, CudaTensor } from '../../../src/backend/cuda/tensors.ts';
import type { SlotSpeechModel } from '../../../src/model/speech-model.ts';

function isTensor(value: unknown): value is CudaTensor {
  const data = (value as { data?: { pointer?: unknown } } | null)?.data;
  return typeof data?.pointer === 'bigint' && Array.isArray((value as { shape?: unknown }).shape);
}

export function weightTensors(model: SlotSpeechModel<CudaBuffer>): [string, CudaTensor][] {
  const found: [string, CudaTensor][] = [];
  const seen = new Set<object>();
  const walk = (value: unknown, path: string) => {
    if (typeof value !== 'object' || value === null || seen.has(value) || ArrayBuffer.isView(value)) return;
    seen.add(value);
    if (isTensor(value)) {
      found.push([path, value]);
      if (value.scales !== undefined) found.push([`${path}.scales`, value.scales]);
      return;
    }
    for (const [key, field] of Object.entries(value)) if (key !== 'backend') walk(field, `${path}.${key}`);
  };
  walk(model.backbone, 'backbone');
  walk(model.tower, 'tower');
  return found;
}

/** Path, dtype and shape of each tensor: two loads must agree on these before their bytes are compared. */
export function tensorLayout(tensors: readonly [string, CudaTensor][]): string[] {
  return tensors.map(([path, tensor]) => `${path} ${tensor.dtype} [${tensor.shape.join(', ')}]`);
}
