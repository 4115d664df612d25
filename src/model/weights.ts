// The weight map: from a config, every tensor a drama3 checkpoint holds, with its role, dtype and shape, one line
// each. Shapes are row-major as stored: linear weights [out, in]; conv1d [channels, 1, kernel]; FP8 block scales
// [ceil(rows/128), ceil(cols/128)] F32 (value = fp8 × scale per 128×128 block). H text hidden, V vocab, E experts,
// I expert width, d tower hidden. Names come from weights-names.ts.
import type { DType } from '../checkpoint/tensor.ts';
import type { Drama3Config, TextConfig } from './config.ts';
import {
  backboneNames,
  type ExpertFormat,
  type SwiGluNames,
  type TowerLayerNames,
  towerNames,
} from './weights-names.ts';

export * from './weights-names.ts';

export type TensorRole =
  | 'token_embedding'
  | 'codebook_embedding'
  | 'output_head'
  /** Zero-centred RMSNorm weight: applied as (1 + w). */
  | 'norm'
  /** The GDN output norm: applied as plain w (then × SiLU(z)). */
  | 'gated_norm'
  | 'linear'
  | 'router'
  | 'conv'
  | 'decay_log'
  | 'dt_bias'
  | 'expert'
  | 'expert_scale';

/** Which stack a tensor belongs to (each has its own residual stream). */
export type TensorPart = 'backbone' | 'tower';

export interface TensorSpec {
  readonly name: string;
  readonly role: TensorRole;
  readonly part: TensorPart;
  /** The dtype `synth` writes and the loader expects. */
  readonly dtype: DType;
  /** Every dtype the loader accepts for this tensor (includes `dtype`). */
  readonly accepts: readonly DType[];
  readonly shape: readonly number[];
  /** True for projections that add into a residual stream (their scale bounds its growth). */
  readonly writesResidual: boolean;
  /** Backbone layer (tower tensors carry none: their names say which tower layer). */
  readonly layer?: number;
  readonly expert?: number;
}

export interface WeightMapOptions {
  readonly prefix: string;
  readonly experts: ExpertFormat;
}

/** Small fp32-friendly tensors a converter may leave in F32. */
const WIDE_FLOAT_ROLES: ReadonlySet<TensorRole> = new Set(['norm', 'gated_norm', 'decay_log', 'dt_bias']);
const WIDE_FLOAT: readonly DType[] = ['BF16', 'F32'];
/** One shared list a dtype: a spec accepting only its own dtype needs no array of its own. */
const ONLY: Readonly<Record<DType, readonly DType[]>> = {
  BF16: ['BF16'],
  F16: ['F16'],
  F32: ['F32'],
  F8_E4M3: ['F8_E4M3'],
  I64: ['I64'],
  I32: ['I32'],
  U8: ['U8'],
};

/** Where a spec sits: its part, then its backbone layer and expert when it has them. */
interface Place {
  readonly part: TensorPart;
  readonly layer?: number;
  readonly expert?: number;
}

/** Appends specs to one shared array, stamping each with the layer/expert it belongs to. */
class SpecList {
  constructor(
    readonly specs: TensorSpec[] = [],
    private readonly where: Place = { part: 'backbone' },
  ) {}

  add(name: string, role: TensorRole, shape: number[], options: { residual?: boolean; dtype?: DType } = {}): void {
    const dtype = options.dtype ?? 'BF16';
    const accepts = WIDE_FLOAT_ROLES.has(role) ? WIDE_FLOAT : ONLY[dtype];
    this.specs.push({ name, role, dtype, accepts, shape, writesResidual: options.residual ?? false, ...this.where });
  }

  at(layer: number, expert?: number): SpecList {
    const { part } = this.where;
    return new SpecList(this.specs, expert === undefined ? { part, layer } : { part, layer, expert });
  }

  inPart(part: TensorPart): SpecList {
    return new SpecList(this.specs, { part });
  }
}

/** F32 scale grid of a [rows, cols] FP8 weight. */
export function blockScaleShape(rows: number, cols: number): number[] {
  return [Math.ceil(rows / 128), Math.ceil(cols / 128)];
}

function swiGlu(list: SpecList, names: SwiGluNames, inner: number, outer: number, role: TensorRole): void {
  list.add(names.gateProj, role, [inner, outer]);
  list.add(names.upProj, role, [inner, outer]);
  list.add(names.downProj, role, [outer, inner], { residual: true });
}

function expertSpecs(list: SpecList, text: TextConfig, prefix: string, layer: number, format: ExpertFormat): void {
  const { hiddenSize: hidden, expertIntermediate: inner, experts } = text;
  const mlp = backboneNames(prefix).layer(layer).mlp;
  if (format === 'fused') {
    list.add(mlp.fusedGateUpProj, 'expert', [experts, 2 * inner, hidden]);
    list.add(mlp.fusedDownProj, 'expert', [experts, hidden, inner], { residual: true });
    return;
  }
  for (let expert = 0; expert < experts; expert++) {
    const names = mlp.expert(expert);
    const perExpert = list.at(layer, expert);
    expertMatrix(perExpert, format, names.gateProj, names.gateProjScale, [inner, hidden], false);
    expertMatrix(perExpert, format, names.upProj, names.upProjScale, [inner, hidden], false);
    expertMatrix(perExpert, format, names.downProj, names.downProjScale, [hidden, inner], true);
  }
}

/** One routed expert's [rows, cols] matrix: bf16, or e4m3 followed by its block scales. */
function expertMatrix(
  list: SpecList,
  format: ExpertFormat,
  name: string,
  scale: string,
  shape: [number, number],
  residual: boolean,
): void {
  if (format === 'bf16') {
    list.add(name, 'expert', shape, { residual });
    return;
  }
  list.add(name, 'expert', shape, { residual, dtype: 'F8_E4M3' });
  list.add(scale, 'expert_scale', blockScaleShape(shape[0], shape[1]), { dtype: 'F32' });
}

function backboneLayerSpecs(list: SpecList, text: TextConfig, options: WeightMapOptions, layer: number): void {
  const hidden = text.hiddenSize;
  const names = backboneNames(options.prefix).layer(layer);
  list.add(names.inputLayernorm, 'norm', [hidden]);
  if (text.layerTypes[layer] === 'linear_attention') {
    const gdn = names.linearAttention;
    list.add(gdn.inProjQkv, 'linear', [text.linearConvChannels, hidden]);
    list.add(gdn.inProjZ, 'linear', [text.linearValueDim, hidden]);
    list.add(gdn.inProjB, 'linear', [text.linearValueHeads, hidden]);
    list.add(gdn.inProjA, 'linear', [text.linearValueHeads, hidden]);
    list.add(gdn.conv1d, 'conv', [text.linearConvChannels, 1, text.linearConvKernel]);
    list.add(gdn.aLog, 'decay_log', [text.linearValueHeads]);
    list.add(gdn.dtBias, 'dt_bias', [text.linearValueHeads]);
    list.add(gdn.norm, 'gated_norm', [text.linearValueHeadDim]);
    list.add(gdn.outProj, 'linear', [hidden, text.linearValueDim], { residual: true });
  } else {
    const attention = names.selfAttention;
    const kvRows = text.keyValueHeads * text.headDim;
    list.add(attention.qProj, 'linear', [text.queryProjectionRows, hidden]);
    list.add(attention.kProj, 'linear', [kvRows, hidden]);
    list.add(attention.vProj, 'linear', [kvRows, hidden]);
    list.add(attention.qNorm, 'norm', [text.headDim]);
    list.add(attention.kNorm, 'norm', [text.headDim]);
    list.add(attention.oProj, 'linear', [hidden, text.attentionHeads * text.headDim], { residual: true });
  }
  list.add(names.postAttentionLayernorm, 'norm', [hidden]);
  list.add(names.mlp.router, 'router', [text.experts, hidden]);
  expertSpecs(list, text, options.prefix, layer, options.experts);
  swiGlu(list, names.mlp.sharedExpert, text.sharedExpertIntermediate, hidden, 'linear');
  list.add(names.mlp.sharedExpertGate, 'linear', [1, hidden]);
}

function towerLayerSpecs(list: SpecList, config: Drama3Config, names: TowerLayerNames, inputWidth: number): void {
  const tower = config.tower;
  const d = tower.hiddenSize;
  list.add(names.enorm, 'norm', [d]);
  list.add(names.hnorm, 'norm', [inputWidth]);
  list.add(names.ehProj, 'linear', [d, d + inputWidth]);
  list.add(names.inputLayernorm, 'norm', [d]);
  const attention = names.selfAttention;
  list.add(attention.qProj, 'linear', [tower.attentionHeads * tower.headDim, d]);
  list.add(attention.kProj, 'linear', [tower.keyValueHeads * tower.headDim, d]);
  list.add(attention.vProj, 'linear', [tower.keyValueHeads * tower.headDim, d]);
  list.add(attention.qNorm, 'norm', [tower.headDim]);
  list.add(attention.kNorm, 'norm', [tower.headDim]);
  list.add(attention.oProj, 'linear', [d, tower.attentionHeads * tower.headDim], { residual: true });
  list.add(names.postAttentionLayernorm, 'norm', [d]);
  swiGlu(list, names.mlp, tower.intermediate, d, 'linear');
  list.add(names.outNorm, 'norm', [d]);
  if (names.head !== undefined) list.add(names.head, 'output_head', [config.audio.codebookSize, d]);
}

function backboneSpecs(root: SpecList, text: TextConfig, options: WeightMapOptions): void {
  const backbone = backboneNames(options.prefix);
  root.add(backbone.embedTokens, 'token_embedding', [text.vocabSize, text.hiddenSize]);
  for (let layer = 0; layer < text.layers; layer++) backboneLayerSpecs(root.at(layer), text, options, layer);
  root.add(backbone.norm, 'norm', [text.hiddenSize]);
  if (!text.tieWordEmbeddings) root.add(backbone.lmHead, 'output_head', [text.vocabSize, text.hiddenSize]);
}

/** The backbone's tensors alone (a Qwen3.5-MoE checkpoint without Drama's tower). */
export function backboneTensors(text: TextConfig, options: WeightMapOptions): TensorSpec[] {
  const root = new SpecList();
  backboneSpecs(root, text, options);
  return root.specs;
}

/** Every tensor the checkpoint must hold, in a stable order (backbone, frame-row embedding, tower). */
export function expectedTensors(config: Drama3Config, options: WeightMapOptions): TensorSpec[] {
  const { text, audio, tower } = config;
  const root = new SpecList();
  const backbone = backboneNames(options.prefix);
  backboneSpecs(root, text, options);
  root.add(backbone.codebookEmbeddings, 'codebook_embedding', [audio.codebookEmbeddingRows, text.hiddenSize]);
  const towerNameMap = towerNames();
  const towerList = root.inPart('tower');
  towerList.add(towerNameMap.codebookEmbeddings, 'codebook_embedding', [audio.codebookEmbeddingRows, tower.hiddenSize]);
  for (let layer = 0; layer < tower.sharedLayers; layer++) {
    const inputWidth = layer === 0 ? text.hiddenSize : tower.hiddenSize;
    towerLayerSpecs(towerList, config, towerNameMap.sharedLayer(layer), inputWidth);
  }
  for (let layer = 0; layer < tower.codebookLayers; layer++) {
    // With no shared layers the first per-codebook layer reads the backbone row directly.
    const inputWidth = layer === 0 && tower.sharedLayers === 0 ? text.hiddenSize : tower.hiddenSize;
    towerLayerSpecs(towerList, config, towerNameMap.codebookLayer(layer), inputWidth);
  }
  return root.specs;
}
