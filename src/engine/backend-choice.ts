// Which backend runs the speech model: `cpu`, `cuda`, or `auto` (cuda when a device, its kernels and the checkpoint's
// geometry all allow it, else cpu, with the reason said). Asking for cuda where it cannot run is refused by name
// before any weight is read.
import fs from 'node:fs';
import path from 'node:path';
import { cudaAvailability } from '../backend/cuda/driver.ts';
import { kernelDirectory } from '../backend/cuda/modules.ts';
import { DramaError } from '../errors.ts';
import type { Drama3Config } from '../model/config.ts';
import { cudaGeometryRefusals } from './cuda-geometry.ts';

export const BACKEND_NAMES = ['auto', 'cuda', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export interface BackendChoice {
  readonly backend: 'cpu' | 'cuda';
  /** One line for the start-up notices: what was chosen and why. */
  readonly reason: string;
}

/** What the choice depends on besides the config (the real probes by default; tests pass their own). */
export interface BackendProbes {
  readonly device: () => { available: true } | { available: false; reason: string };
  /** The kernel folder when its modules are there, else the reason they are not. */
  readonly kernels: () => { available: true } | { available: false; reason: string };
}

function probeKernels(): { available: true } | { available: false; reason: string } {
  const directory = kernelDirectory();
  // The GEMM module stands for all: `npm run build:kernels` writes every family together.
  if (fs.existsSync(path.join(directory, 'gemm.fatbin'))) return { available: true };
  return { available: false, reason: `no kernel modules in ${directory} (run npm run build:kernels)` };
}

export const REAL_PROBES: BackendProbes = { device: cudaAvailability, kernels: probeKernels };

export function chooseBackend(
  requested: BackendName,
  config: Drama3Config,
  probes: BackendProbes = REAL_PROBES,
): BackendChoice {
  if (requested === 'cpu') return { backend: 'cpu', reason: 'backend: cpu (asked for)' };
  const refusals: string[] = [];
  const device = probes.device();
  if (!device.available) refusals.push(`no CUDA device (${device.reason})`);
  else {
    const kernels = probes.kernels();
    if (!kernels.available) refusals.push(kernels.reason);
  }
  refusals.push(...cudaGeometryRefusals(config));
  if (refusals.length === 0)
    return { backend: 'cuda', reason: `backend: cuda (${requested === 'auto' ? 'auto' : 'asked for'})` };
  if (requested === 'cuda') {
    throw new DramaError('CUDA_BACKEND_UNAVAILABLE', `the cuda backend cannot run this model: ${refusals.join('; ')}`, {
      kind: 'device',
      param: 'backend',
    });
  }
  return { backend: 'cpu', reason: `backend: cpu (auto: ${refusals.join('; ')})` };
}

export function parseBackendName(value: string): BackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(value)) return value as BackendName;
  throw new DramaError('BACKEND_UNKNOWN', `backend must be one of ${BACKEND_NAMES.join(', ')}, got '${value}'`, {
    param: 'backend',
  });
}
