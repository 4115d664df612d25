// The serve bench's roofline beside its throughput: for each client count, the frame step alone at that many lanes
// reads the weights it reaches and every lane's state (frame-bytes.ts) at the copy bandwidth measured in the same run;
// served frames/s also carry the prefill and the codec on the same GPU, so they sit below it. The PyTorch baseline is
// the frame bench's (transformers + flash-linear-attention, the backbone's step alone, batches 1 and 64).

import { candidateIds } from '../../src/model/candidates.ts';
import { loadConfig } from '../../src/model/config.ts';
import { syntheticDeviceSpecs } from '../../src/synth/device-model.ts';
import { stepBytes } from './frame-bytes.ts';
import { PYTORCH_BASELINE } from './frames-report.ts';
import type { CopyBandwidth } from './roofline.ts';

export interface ServeRooflineRow {
  readonly clients: number;
  readonly framesPerSecond: number;
  /** Bytes one step of `clients` lanes reads (weights it reaches + lane state), and the frames/s they bound. */
  readonly stepBytes: number;
  readonly rooflineFramesPerSecond: number;
  /** PyTorch's backbone step at this batch, where it was measured (1 and 64). */
  readonly pytorchFramesPerSecond?: number;
}

/** The rows for a synthetic checkpoint in `dir` (FP8 experts, as the bench writes it), lanes at `position`. */
export async function serveRoofline(
  dir: string,
  served: readonly { readonly clients: number; readonly framesPerSecond: number }[],
  position: number,
  bandwidth: CopyBandwidth,
): Promise<ServeRooflineRow[]> {
  const { config } = await loadConfig(dir);
  const specs = syntheticDeviceSpecs(config);
  const candidates = (await candidateIds(dir, config)).ids.length;
  const pytorch: Record<number, number> = {
    1: PYTORCH_BASELINE.batch1.framesPerSecond,
    64: PYTORCH_BASELINE.batch64.framesPerSecond,
  };
  return served.map(({ clients, framesPerSecond }) => {
    const bytes = stepBytes(config, specs, candidates, clients, position);
    const total = bytes.weights + bytes.state;
    const rooflineFramesPerSecond = (clients * bandwidth.gigabytesPerSecond * 1e9) / total;
    return {
      clients,
      framesPerSecond,
      stepBytes: total,
      rooflineFramesPerSecond,
      ...(pytorch[clients] === undefined ? {} : { pytorchFramesPerSecond: pytorch[clients] }),
    };
  });
}
