// Where the engine's codec decodes: `cuda` or `cpu`, or `auto` (cuda when a CUDA device and the kernels are there and
// the model was not asked onto the cpu, else cpu), with the reason said at start. Asking for cuda where it cannot run
// is refused by name before any weight is read.
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import { DramaError } from '../errors.ts';
import { type BackendName, type BackendProbes, REAL_PROBES } from './backend-choice.ts';

export const CODEC_PRECISIONS = ['f32', 'f16-weights', 'f16'] as const satisfies readonly CodecPrecision[];

export interface CodecChoice {
  readonly backend: 'cpu' | 'cuda';
  readonly precision: CodecPrecision;
  readonly reason: string;
}

export function chooseCodecBackend(
  requested: BackendName,
  modelBackend: BackendName,
  precision: CodecPrecision,
  probes: BackendProbes = REAL_PROBES,
): CodecChoice {
  if (requested === 'cpu') return { backend: 'cpu', precision, reason: 'codec: cpu (asked for)' };
  if (requested === 'auto' && modelBackend === 'cpu') {
    return { backend: 'cpu', precision, reason: 'codec: cpu (auto: the model was asked onto the cpu)' };
  }
  const device = probes.device();
  const kernels = device.available ? probes.kernels() : device;
  if (kernels.available) {
    const how = requested === 'auto' ? 'auto' : 'asked for';
    return { backend: 'cuda', precision, reason: `codec: cuda, ${precision} (${how})` };
  }
  const why = device.available ? kernels.reason : `no CUDA device (${device.reason})`;
  if (requested === 'cuda') {
    throw new DramaError('CUDA_CODEC_UNAVAILABLE', `the codec cannot run on cuda: ${why}`, {
      kind: 'device',
      param: 'codec-backend',
    });
  }
  return { backend: 'cpu', precision, reason: `codec: cpu (auto: ${why})` };
}
