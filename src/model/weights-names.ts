// Checkpoint tensor names: the one place that spells them (MODEL.md §2–§3). Backbone names carry a prefix P detected
// once from the index (`model.`, `model.language_model.` or `language_model.model.`); the frame-row embedding and the
// tower live outside it. Everything about the tower and the frame-row embedding is a guess kept here so that one
// edit fixes it when the real checkpoint disagrees.
import { DramaError } from '../errors.ts';

/** Backbone prefixes we know of, longest first so that `model.` does not shadow `model.language_model.`. */
const BACKBONE_PREFIXES = ['model.language_model.', 'language_model.model.', 'model.'] as const;

export interface LinearAttentionNames {
  readonly inProjQkv: string;
  readonly inProjZ: string;
  readonly inProjB: string;
  readonly inProjA: string;
  readonly outProj: string;
  readonly conv1d: string;
  readonly aLog: string;
  readonly dtBias: string;
  readonly norm: string;
}

export interface SelfAttentionNames {
  readonly qProj: string;
  readonly kProj: string;
  readonly vProj: string;
  readonly oProj: string;
  readonly qNorm: string;
  readonly kNorm: string;
}

export interface SwiGluNames {
  readonly gateProj: string;
  readonly upProj: string;
  readonly downProj: string;
}

/** One routed expert on disk; `*Scale` are the FP8 block scales (`weight_scale_inv`). */
export interface ExpertNames extends SwiGluNames {
  readonly gateProjScale: string;
  readonly upProjScale: string;
  readonly downProjScale: string;
}

export interface MoeNames {
  readonly router: string;
  expert(expert: number): ExpertNames;
  /** transformers' fused in-memory form: [E, 2I, H] (gate rows then up rows per expert) and [E, H, I]. */
  readonly fusedGateUpProj: string;
  readonly fusedDownProj: string;
  readonly sharedExpert: SwiGluNames;
  readonly sharedExpertGate: string;
}

export interface BackboneLayerNames {
  readonly inputLayernorm: string;
  readonly postAttentionLayernorm: string;
  readonly linearAttention: LinearAttentionNames;
  readonly selfAttention: SelfAttentionNames;
  readonly mlp: MoeNames;
}

export interface BackboneNames {
  readonly prefix: string;
  readonly embedTokens: string;
  readonly norm: string;
  readonly lmHead: string;
  /** Drama's frame-row codebook embedding [semantic + residual rows, H] (guess). */
  readonly codebookEmbeddings: string;
  layer(layer: number): BackboneLayerNames;
}

export interface TowerLayerNames {
  readonly enorm: string;
  readonly hnorm: string;
  readonly ehProj: string;
  readonly inputLayernorm: string;
  readonly selfAttention: SelfAttentionNames;
  readonly postAttentionLayernorm: string;
  readonly mlp: SwiGluNames;
  readonly outNorm: string;
  /** Per-codebook layers only: logits of the next code [codebook size, d]. */
  readonly head: string | undefined;
}

export interface TowerNames {
  readonly codebookEmbeddings: string;
  sharedLayer(layer: number): TowerLayerNames;
  codebookLayer(layer: number): TowerLayerNames;
}

const weight = (base: string) => `${base}.weight`;

function swiGlu(base: string): SwiGluNames {
  return {
    gateProj: weight(`${base}.gate_proj`),
    upProj: weight(`${base}.up_proj`),
    downProj: weight(`${base}.down_proj`),
  };
}

function selfAttention(base: string): SelfAttentionNames {
  return {
    qProj: weight(`${base}.q_proj`),
    kProj: weight(`${base}.k_proj`),
    vProj: weight(`${base}.v_proj`),
    oProj: weight(`${base}.o_proj`),
    qNorm: weight(`${base}.q_norm`),
    kNorm: weight(`${base}.k_norm`),
  };
}

/** The output head sits beside the backbone module: `lm_head` at the top, or inside `language_model.`. */
function lmHeadName(prefix: string): string {
  return prefix === 'language_model.model.' ? 'language_model.lm_head.weight' : 'lm_head.weight';
}

export function backboneNames(prefix: string): BackboneNames {
  return {
    prefix,
    embedTokens: `${prefix}embed_tokens.weight`,
    norm: `${prefix}norm.weight`,
    lmHead: lmHeadName(prefix),
    codebookEmbeddings: 'codebook_embeddings.weight',
    layer(layer: number): BackboneLayerNames {
      const base = `${prefix}layers.${layer}`;
      const linear = `${base}.linear_attn`;
      const mlp = `${base}.mlp`;
      return {
        inputLayernorm: weight(`${base}.input_layernorm`),
        postAttentionLayernorm: weight(`${base}.post_attention_layernorm`),
        linearAttention: {
          inProjQkv: weight(`${linear}.in_proj_qkv`),
          inProjZ: weight(`${linear}.in_proj_z`),
          inProjB: weight(`${linear}.in_proj_b`),
          inProjA: weight(`${linear}.in_proj_a`),
          outProj: weight(`${linear}.out_proj`),
          conv1d: weight(`${linear}.conv1d`),
          aLog: `${linear}.A_log`,
          dtBias: `${linear}.dt_bias`,
          norm: weight(`${linear}.norm`),
        },
        selfAttention: selfAttention(`${base}.self_attn`),
        mlp: {
          router: weight(`${mlp}.gate`),
          expert(expert: number): ExpertNames {
            const { gateProj, upProj, downProj } = swiGlu(`${mlp}.experts.${expert}`);
            // Named one by one, not spread: the weight map asks for every expert of every layer.
            return {
              gateProj,
              upProj,
              downProj,
              gateProjScale: `${gateProj}_scale_inv`,
              upProjScale: `${upProj}_scale_inv`,
              downProjScale: `${downProj}_scale_inv`,
            };
          },
          fusedGateUpProj: `${mlp}.experts.gate_up_proj`,
          fusedDownProj: `${mlp}.experts.down_proj`,
          sharedExpert: swiGlu(`${mlp}.shared_expert`),
          sharedExpertGate: weight(`${mlp}.shared_expert_gate`),
        },
      };
    },
  };
}

function towerLayer(base: string, withHead: boolean): TowerLayerNames {
  return {
    enorm: weight(`${base}.enorm`),
    hnorm: weight(`${base}.hnorm`),
    ehProj: weight(`${base}.eh_proj`),
    inputLayernorm: weight(`${base}.input_layernorm`),
    selfAttention: selfAttention(`${base}.self_attn`),
    postAttentionLayernorm: weight(`${base}.post_attention_layernorm`),
    mlp: swiGlu(`${base}.mlp`),
    outNorm: weight(`${base}.out_norm`),
    head: withHead ? weight(`${base}.head`) : undefined,
  };
}

export function towerNames(): TowerNames {
  return {
    codebookEmbeddings: 'audio_decoder_mtp.codebook_embeddings.weight',
    sharedLayer: (layer) => towerLayer(`audio_decoder_mtp_shared.layers.${layer}`, false),
    codebookLayer: (layer) => towerLayer(`audio_decoder_mtp.layers.${layer}`, true),
  };
}

/** Tensor names to look in: a list, or a lookup by name (a Set, or a Map keyed by name). */
export type TensorNames = Iterable<string> | NameLookup;

interface NameLookup {
  has(name: string): boolean;
}

/** A lookup is asked as it is; a list is gathered into a Set once. */
function nameLookup(names: TensorNames): NameLookup {
  const lookup = names as Partial<NameLookup>;
  return typeof lookup.has === 'function' ? (lookup as NameLookup) : new Set(names as Iterable<string>);
}

/** Finds the backbone prefix from a checkpoint's tensor names (by its embedding or first layer norm). */
export function detectBackbonePrefix(names: TensorNames): string {
  const set = nameLookup(names);
  for (const prefix of BACKBONE_PREFIXES) {
    if (set.has(`${prefix}embed_tokens.weight`) || set.has(`${prefix}layers.0.input_layernorm.weight`)) return prefix;
  }
  throw new DramaError(
    'WEIGHTS_PREFIX_NOT_FOUND',
    `no backbone tensors found: looked for embed_tokens.weight under ${BACKBONE_PREFIXES.map((p) => `"${p}"`).join(', ')}`,
    { kind: 'bad_checkpoint' },
  );
}

/** How the routed experts are stored: per expert FP8 with block scales, per expert bf16, or transformers' fused bf16. */
export type ExpertFormat = 'fp8' | 'bf16' | 'fused';

/** Reads the expert format off the names of layer 0 (every layer must then use the same one). */
export function detectExpertFormat(names: TensorNames, prefix: string): ExpertFormat {
  const set = nameLookup(names);
  const mlp = backboneNames(prefix).layer(0).mlp;
  if (set.has(mlp.fusedGateUpProj)) return 'fused';
  return set.has(mlp.expert(0).gateProjScale) ? 'fp8' : 'bf16';
}
