// Launcher for moe_route.cu's moe_combine_add_rms_norm: the MoE combine of each row staged in shared memory and handed
// to the residual add and zero-centred norm after it, one launch for moe_combine and add_rms_norm with the bits of the
// two. One block per row with the threads the norm's own launch would have (rmsNorm.ts, normThreads): its sum of
// squares keeps that launch's order.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';
import { type MoeCombineInputs, requireRouting } from './moe.ts';
import { type NormWeightDtype, normThreads } from './rmsNorm.ts';

const MOE_COMBINE_ADD_RMS_NORM_KERNEL: Record<NormWeightDtype, KernelName> = {
  bf16: { family: 'moe_route', name: 'moe_combine_add_rms_norm_bf16' },
  f32: { family: 'moe_route', name: 'moe_combine_add_rms_norm_f32_weight_bf16' },
};

/** moe_combine.cuh's MOE_COMBINE_NORM_MOST_THREADS: its registers and its staged row allow no wider block (2048
 *  columns, the widest hidden moeGeometry accepts); a thread combines 4 columns (8-byte loads). */
const MOE_COMBINE_NORM_MOST_THREADS = 512;

export interface MoeCombineNormArguments extends MoeCombineInputs {
  /** The residual [rows, hidden] bf16: x = bf16(x + combined), written back. */
  readonly x: DevicePointer;
  /** The norm of the new x, [rows, hidden] bf16; must not alias x. */
  readonly out: DevicePointer;
  readonly weight: DevicePointer;
  readonly weightDtype: NormWeightDtype;
  readonly eps: number;
}

/** x = bf16(x + combine(row)), out = zero-centred norm of x: the bits of moeCombine then addRmsNorm. */
export function moeCombineAddRmsNorm(cuda: CudaContext, a: MoeCombineNormArguments, options: LaunchOptions = {}): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireCount(a.hidden, 'hidden', 4, 4 * MOE_COMBINE_NORM_MOST_THREADS);
  if (a.hidden % 4 !== 0) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `hidden must be a multiple of 4, got ${a.hidden}`, {
      kind: 'internal',
      param: 'hidden',
    });
  }
  if (a.out === a.x) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', 'the norm after a residual add cannot write over the residual', {
      kind: 'internal',
      param: 'out',
    });
  }
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.expertOut)
    .pointer(a.expertIds)
    .pointer(a.expertWeights)
    .pointer(a.sharedOut)
    .pointer(a.sharedGate)
    .pointer(a.weight)
    .int32(a.rows)
    .int32(a.topK)
    .int32(a.hidden)
    .int32(a.experts)
    .float32(a.eps);
  const shape = { grid: [a.rows, 1, 1], block: [normThreads(a.hidden), 1, 1] } as const;
  launch(cuda, MOE_COMBINE_ADD_RMS_NORM_KERNEL[a.weightDtype], shape, args, options);
}
