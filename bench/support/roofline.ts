// The roofline denominators the GPU benches report against: device-to-device copy bandwidth over a 1 GiB buffer,
// counting bytes read + written, warmed up, the median of seven event-timed batches of five copies (memory-bound
// work); and a dense 8192³ bf16 GEMM through cuBLASLt on random operands, the median of five event-timed batches of
// three after three warm-ups (the tensor cores' rate, for compute-bound work).
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { CublasLt } from '../../src/backend/cuda/cublaslt.ts';
import { DeviceBuffers, MiB, randomBf16Block } from './device-buffers.ts';
import { timeEvents } from './gpu-timing.ts';

export interface CopyBandwidth {
  readonly bytes: number;
  readonly milliseconds: number;
  readonly gigabytesPerSecond: number;
}

export function copyBandwidth(cuda: CudaContext): CopyBandwidth {
  const bytes = 1024 * MiB;
  const source = cuda.allocate(bytes, 'copy source');
  const target = cuda.allocate(bytes, 'copy target');
  try {
    // Bandwidth does not depend on the values; a fill only makes the pages resident before the warm-up.
    cuda.driver.fillWords(source.pointer, 0x3f803f80, bytes / 4, cuda.stream);
    const milliseconds = timeEvents(
      cuda,
      () => cuda.driver.copyDeviceToDevice(target.pointer, source.pointer, bytes, cuda.stream),
      { batch: 5, trials: 7, warmups: 2 },
    );
    return { bytes, milliseconds, gigabytesPerSecond: (2 * bytes) / milliseconds / 1e6 };
  } finally {
    source.free();
    target.free();
  }
}

export interface GemmRate {
  readonly size: number;
  readonly milliseconds: number;
  readonly teraflops: number;
}

export function denseGemmRate(cuda: CudaContext, blas: CublasLt): GemmRate {
  const size = 8192;
  const bytes = size * size * 2;
  const buffers = new DeviceBuffers(cuda);
  try {
    const block = randomBf16Block();
    const x = buffers.tiled(bytes, block, 'gemm x');
    const w = buffers.tiled(bytes, block, 'gemm w');
    const y = buffers.allocate(bytes, 'gemm y');
    const milliseconds = timeEvents(cuda, () => blas.matmul(y.pointer, x.pointer, w.pointer, size, size, size), {
      batch: 3,
      trials: 5,
      warmups: 3,
    });
    return { size, milliseconds, teraflops: (2 * size ** 3) / milliseconds / 1e9 };
  } finally {
    buffers.release();
  }
}
