// Kernel modules: build/kernels/<family>.fatbin (sm_90a SASS + compute_80 PTX), loaded once per context and looked
// up by `__global__` name. DRAMA3_KERNEL_DIR overrides the folder (bundles run far from the source tree).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DramaError } from '../../errors.ts';
import type { CudaDriver, Handle } from './driver.ts';

export function kernelDirectory(): string {
  const fromEnvironment = process.env.DRAMA3_KERNEL_DIR;
  if (fromEnvironment) return path.resolve(fromEnvironment);
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../build/kernels');
}

export class KernelLibrary {
  private readonly modules = new Map<string, Handle>();
  private readonly kernels = new Map<string, Handle>();
  private readonly prepared = new Set<Handle>();

  constructor(
    private readonly driver: CudaDriver,
    private readonly directory: string = kernelDirectory(),
  ) {}

  /** The `__global__` function `name` of kernels/cuda/<family>.cu. */
  kernel(family: string, name: string): Handle {
    const key = `${family}/${name}`;
    const known = this.kernels.get(key);
    if (known !== undefined) return known;
    const kernel = this.driver.moduleFunction(this.module(family), name);
    this.kernels.set(key, kernel);
    return kernel;
  }

  /** Runs `prepare` (function attributes such as a raised shared-memory limit) on `kernel` once per loaded module. */
  prepareOnce(kernel: Handle, prepare: (driver: CudaDriver, kernel: Handle) => void): void {
    if (this.prepared.has(kernel)) return;
    prepare(this.driver, kernel);
    this.prepared.add(kernel);
  }

  private module(family: string): Handle {
    const known = this.modules.get(family);
    if (known !== undefined) return known;
    const file = path.join(this.directory, `${family}.fatbin`);
    if (!fs.existsSync(file)) {
      throw new DramaError('KERNEL_MODULE_MISSING', `kernel module ${file} does not exist: run npm run build:kernels`, {
        kind: 'device',
        param: file,
      });
    }
    const module = this.driver.loadModule(new Uint8Array(fs.readFileSync(file)), `${family}.fatbin`);
    this.modules.set(family, module);
    return module;
  }

  unloadAll(): void {
    for (const module of this.modules.values()) this.driver.unloadModule(module);
    this.modules.clear();
    this.kernels.clear();
    this.prepared.clear();
  }
}
