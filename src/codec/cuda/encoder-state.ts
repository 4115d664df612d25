// The codec encode's carried state on the device, one lane: each causal conv's last input rows and the windowed
// transformers' key and value rings (lane-state.ts's slabs), so that audio encoded in passes gives the codes of one
// whole pass. A fresh encode starts from zeros.
import type { CudaContext } from '../../backend/cuda/context.ts';
import { RESIDUAL_DILATIONS } from '../blocks.ts';
import type { CodecConfig, CodecTransformerConfig } from '../config.ts';
import { DEPTHWISE_KERNEL } from '../convnext.ts';
import { type Slab, SlabAllocations, type TransformerRings } from './lane-state.ts';

export interface EncoderBlockHistories {
  readonly units: readonly Slab[];
  /** The regrouped down conv's one row of stride · inputs channels. */
  readonly down: Slab;
  /** The block's transformer, when it has one. */
  readonly rings: readonly TransformerRings[];
}

export interface EncoderState {
  readonly first: Slab;
  readonly blocks: readonly EncoderBlockHistories[];
  readonly tail: Slab;
  readonly depthwise: readonly Slab[];
  readonly preModule: readonly TransformerRings[];
  /** Zeroes everything (a fresh encode), on the context's stream. */
  clear(): void;
  free(): void;
}

/** Kernel of the encoder's first conv and its residual units' dilated convs; of its last conv. */
const ENCODER_KERNEL = 7;
const TAIL_KERNEL = 3;

function rings(slabs: SlabAllocations, config: CodecTransformerConfig, label: string): TransformerRings[] {
  const width = config.heads * config.headDim;
  return Array.from({ length: config.layers }, (_, layer) => slabs.rings(config.window, width, `${label} ${layer}`));
}

export function allocateEncoderState(cuda: CudaContext, config: CodecConfig): EncoderState {
  const slabs = new SlabAllocations(cuda, 1);
  try {
    const first = slabs.slab(ENCODER_KERNEL - 1, 1, 'codec encoder first conv history');
    let width = config.encoderDim;
    const blocks = config.encoderStrides.map((stride, index) => {
      const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
        slabs.slab((ENCODER_KERNEL - 1) * dilation, width, `codec encoder block ${index} unit ${unit} history`),
      );
      const down = slabs.slab(1, stride * width, `codec encoder block ${index} down conv history`);
      const last = index === config.encoderStrides.length - 1;
      const transformer = last ? rings(slabs, config.encoderTransformer, 'codec encoder transformer layer') : [];
      width *= 2;
      return { units, down, rings: transformer };
    });
    const tail = slabs.slab(TAIL_KERNEL - 1, width, 'codec encoder last conv history');
    const depthwise = config.quantizerFactors.map((_, index) =>
      slabs.slab(DEPTHWISE_KERNEL - 1, config.latentDim, `codec downsample ${index} depthwise history`),
    );
    const preModule = rings(slabs, config.preModule, 'codec pre-module layer');
    cuda.synchronize();
    return { first, blocks, tail, depthwise, preModule, clear: () => slabs.clear(0), free: () => slabs.free() };
  } catch (error) {
    slabs.free();
    throw error;
  }
}
