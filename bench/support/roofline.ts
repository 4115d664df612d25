// The roofline denominator every GPU bench reports against: device-to-device copy bandwidth over a 1 GiB buffer,
// counting bytes read + written, warmed up, the median of seven event-timed batches of five copies.
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { MiB } from './device-buffers.ts';
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
