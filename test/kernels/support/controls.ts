// The contract's controls: deliberately wrong kernels (kernels/controls/contract_controls.cu) run in place of a real
// one through the same case and gates. A control is caught when at least one gate fails on at least one shape.
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { attentionBackboneCase, attentionPrepareBackboneCase } from './attentionCases.ts';
import { attentionQkvPrepareCase } from './attentionQkvPrepareCases.ts';
import {
  codecConvCase,
  codecConvMmaCase,
  codecConvMmaStagedCase,
  codecConvTiledCase,
  codecNarrowConvCase,
} from './codecConvCases.ts';
import { codecQuantizeEncodeCase } from './codecQuantizeEncodeCases.ts';
import { codecQuantizerCase } from './codecQuantizerCases.ts';
import { codecDepthwiseConvCase, codecLayerNormCase } from './codecRowsCases.ts';
import { codecSnakeCase } from './codecSnakeCases.ts';
import {
  codecTransformerAttentionCase,
  codecTransformerRingCase,
  codecTransformerRopeCase,
} from './codecTransformerCases.ts';
import { codecTransformerStreamCase } from './codecTransformerStreamCases.ts';
import {
  codecTransposedConvCase,
  codecTransposedConvMmaCase,
  codecTransposedConvTiledCase,
} from './codecTransposedConvCases.ts';
import type { KernelCase } from './contract.ts';
import { deltaNetConvCase, deltaNetGatesCase } from './deltaNetCases.ts';
import { deltaNetCombineCase } from './deltaNetCombineCases.ts';
import { deltaNetRecurrenceCase } from './deltaNetRecurrenceCases.ts';
import { gemmFp32Case, gemmSegmentsCase } from './gemmCases.ts';
import { routerCase, swigluCase } from './mathCases.ts';
import {
  moeDownFp8Case,
  moeDownFp8WideCase,
  moeGateUpFp8Case,
  moeGateUpFp8WideCase,
  moeGroupingCase,
} from './moeCases.ts';
import { moeGatherWordsCase, moePackCase } from './moePackCases.ts';
import { moeGateUpFp8RoutedCase } from './moeRoutedCases.ts';
import { quantizeE4m3Case } from './quantizeCases.ts';
import { addCase, concatCase, embedRecordsCase, gatherCodesCase, slotRecordsCase } from './recordsCases.ts';
import { routerQuantizeCase } from './routerQuantizeCases.ts';
import { addZeroCentredRmsNormCase, embeddingGatherCase, zeroCentredRmsNormCase } from './rowCases.ts';
import { sampleCodeCase, sampleMainBf16Case, sampleMainCase } from './samplerCases.ts';
import { swigluCombineCase } from './swigluCombineCases.ts';
import { towerInputCase } from './towerInputCases.ts';

export interface Control {
  readonly description: string;
  readonly kernelCase: KernelCase;
  readonly kernel: KernelName;
}

const family = 'contract_controls';

export const controls: readonly Control[] = [
  {
    description: 'off-by-one: gather reads row id + 1',
    kernelCase: embeddingGatherCase,
    kernel: { family, name: 'control_gather_off_by_one' },
  },
  {
    description: 'skipped element: SwiGLU never writes the last output',
    kernelCase: swigluCase,
    kernel: { family, name: 'control_swiglu_skips_last' },
  },
  {
    description: 'wrong rounding: RMSNorm truncates to bf16',
    kernelCase: zeroCentredRmsNormCase,
    kernel: { family, name: 'control_rms_norm_truncating' },
  },
  {
    description: 'skipped store: the fused residual add + norm never writes the sum back',
    kernelCase: addZeroCentredRmsNormCase,
    kernel: { family, name: 'control_add_rms_norm_no_store' },
  },
  {
    description: "wrong order: the SwiGLU combine adds gate's and up's K chunks from the last one down",
    kernelCase: swigluCombineCase,
    kernel: { family: 'swiglu_controls', name: 'control_swiglu_combine_chunks_descending' },
  },
  {
    description: "wrong weight: the tower input norms the code half with the input half's weight",
    kernelCase: towerInputCase,
    kernel: { family: 'rms_norm_controls', name: 'control_tower_input_code_normed_with_input_weight' },
  },
  {
    description: 'wrong tie-break: router sends equal probabilities to the higher index',
    kernelCase: routerCase,
    kernel: { family, name: 'control_router_ties_high' },
  },
  {
    description: 'wrong cut-off: the sampler keeps top-k + 1 candidates for main',
    kernelCase: sampleMainCase,
    kernel: { family: 'sampler_controls', name: 'control_sample_main_top_k_plus_one' },
  },
  {
    description: 'wrong cut-off: the sampler keeps top-k + 1 candidates for a code',
    kernelCase: sampleCodeCase,
    kernel: { family: 'sampler_controls', name: 'control_sample_code_top_k_plus_one' },
  },
  {
    description: 'wrong cut-off: the sampler keeps top-k + 1 candidates for main from bf16 logits',
    kernelCase: sampleMainBf16Case,
    kernel: { family: 'sampler_controls', name: 'control_sample_main_bf16_top_k_plus_one' },
  },
  {
    description: 'wrong order: the full ranking (top-k off or above 64) puts the least likely candidates first',
    kernelCase: sampleMainCase,
    kernel: { family: 'sampler_ranking_controls', name: 'control_sample_main_ranked_ascending' },
  },
  {
    description: 'off-by-one position: attention prepare writes K one row past its position',
    kernelCase: attentionPrepareBackboneCase,
    kernel: { family: 'attention_controls', name: 'control_attention_prepare_key_row_off_by_one' },
  },
  {
    description: 'off-by-one position: attention attends one key too few',
    kernelCase: attentionBackboneCase,
    kernel: { family: 'attention_controls', name: 'control_attention_short_by_one_d256' },
  },
  {
    description: "skipped call: the few-rows kernel's shared form leaves a call past its bound to no walk",
    kernelCase: attentionBackboneCase,
    kernel: { family: 'attention_controls', name: 'control_attention_shared_per_row_idle_d256' },
  },
  {
    description: "skipped pair: the grouped down GEMM never writes a tile's last pair",
    kernelCase: moeDownFp8Case,
    kernel: { family: 'moe_controls', name: 'control_moe_down_skips_last_pair' },
  },
  {
    description: 'batch-dependent order: GEMM walks each K tile backwards when the call has more than one row',
    // fp32 outputs: every reordered sum shows, where a bf16 output hides most of them in its rounding.
    kernelCase: gemmFp32Case,
    kernel: { family: 'gemm_controls', name: 'control_gemm_k_reversed_with_rows' },
  },
  {
    description: 'wrong layout: SwiGLU declares its 8-byte row stride as a 4-byte int',
    kernelCase: swigluCase,
    kernel: { family, name: 'control_swiglu_int_stride' },
  },
  {
    description: 'batch-dependent path: RMSNorm rounds x·r to bf16 when the call has several rows',
    kernelCase: zeroCentredRmsNormCase,
    kernel: { family, name: 'control_rms_norm_batched_path' },
  },
  {
    description: 'off-by-one conv history: the window reaches one row further back',
    kernelCase: deltaNetConvCase,
    kernel: { family: 'delta_net_controls', name: 'control_delta_net_conv_history_off_by_one' },
  },
  {
    description: 'skipped last row: the delta-rule recurrence stops one row early',
    kernelCase: deltaNetRecurrenceCase,
    kernel: { family: 'delta_net_controls', name: 'control_delta_net_recurrence_skips_last_row' },
  },
  {
    description: 'off-by-one column: record embedding reads the next codebook',
    kernelCase: embedRecordsCase,
    kernel: { family: 'records_controls', name: 'control_embed_records_next_codebook' },
  },
  {
    description: 'unmasked code: the code gather reads a table row for code −1 instead of writing zeros',
    kernelCase: gatherCodesCase,
    kernel: { family: 'records_controls', name: 'control_gather_codes_unmasked' },
  },
  {
    description: "skipped lane: the slot-record move never copies the batch's last lane",
    kernelCase: slotRecordsCase,
    kernel: { family: 'records_controls', name: 'control_slot_records_skip_last_lane' },
  },
  {
    description: 'skipped element: the residual add leaves the last element unadded',
    kernelCase: addCase,
    kernel: { family: 'records_controls', name: 'control_add_skips_last' },
  },
  {
    description: 'off-by-one column: concatenation reads its second part one column ahead',
    kernelCase: concatCase,
    kernel: { family: 'records_controls', name: 'control_concat_columns_off_by_one' },
  },
  {
    description: 'wrong format: the e4m3 quantiser scales by amax/240 (e4m3fnuz) instead of amax/448',
    kernelCase: quantizeE4m3Case,
    kernel: { family: 'quantize_controls', name: 'control_quantize_e4m3_fnuz_scale' },
  },
  {
    description: "skipped block: the fused router + quantiser's warps never quantise a row's last 128 columns",
    kernelCase: routerQuantizeCase,
    kernel: { family: 'router_quantize_controls', name: 'control_router_quantize_skips_last_block' },
  },
  {
    description:
      "kept counter: the fused router's last block groups but never resets the arrival counter, so the next launch " +
      'groups nothing',
    kernelCase: routerQuantizeCase,
    kernel: { family: 'router_quantize_controls', name: 'control_router_group_counter_kept' },
  },
  {
    description: "wrong offsets: a one-row router launch's warp counts each chosen expert into its own offset",
    kernelCase: routerQuantizeCase,
    kernel: { family: 'router_quantize_controls', name: 'control_router_one_row_offsets_inclusive' },
  },
  {
    description: "skipped block: the one-row routed gate|up launch's warps never quantise the row's last 128 columns",
    kernelCase: moeGateUpFp8RoutedCase,
    kernel: { family: 'moe_controls', name: 'control_moe_routed_skips_last_block' },
  },
  {
    description:
      "wrong offsets: the one-row routed gate|up launch's grouping counts each chosen expert into its own offset",
    kernelCase: moeGateUpFp8RoutedCase,
    kernel: { family: 'moe_controls', name: 'control_moe_routed_offsets_inclusive' },
  },
  {
    description: "off-by-one id: the one-row down GEMM's block for choice k reads choice k + 1's expert",
    kernelCase: moeGateUpFp8RoutedCase,
    kernel: { family: 'moe_controls', name: 'control_moe_down_routed_next_expert' },
  },
  {
    description: "wrong scale: the grouped down GEMM's in-kernel quantiser of h scales by amax/447 instead of amax/448",
    kernelCase: moeDownFp8Case,
    kernel: { family: 'moe_controls', name: 'control_moe_down_h_scale_447' },
  },
  ...codecControls(),
  {
    description: "swapped scales: the grouped gate|up GEMM scales gate rows by the up projection's block scales",
    kernelCase: moeGateUpFp8Case,
    kernel: { family: 'moe_controls', name: 'control_moe_gate_up_scales_swapped' },
  },
  {
    description: "shared chunking: the segmented GEMM closes every segment's K sums at segment 0's chunk size",
    kernelCase: gemmSegmentsCase,
    kernel: { family: 'gemm_controls', name: 'control_gemm_segments_shared_chunking' },
  },
  ...deltaNetAndMoeControls(),
  ...codecTransformerControls(),
  ...codecRowsControls(),
];

function codecControls(): Control[] {
  const codec = (name: string) => ({ family: 'codec_controls', name });
  return [
    {
      description: "wrong tap order: the codec conv applies each channel's kernel flipped",
      kernelCase: codecConvCase,
      kernel: codec('control_codec_conv_taps_reversed'),
    },
    {
      description: 'off-by-one history: the codec conv reads its carried rows one row further back',
      kernelCase: codecConvCase,
      kernel: codec('control_codec_conv_history_off_by_one'),
    },
    {
      description: 'batch-dependent order: the codec conv adds its channel chunks last to first beside other lanes',
      kernelCase: codecConvCase,
      kernel: codec('control_codec_conv_chunks_reversed_with_lanes'),
    },
    {
      description: 'off-by-one history: the codec transposed conv reads its carried row one row too far back',
      kernelCase: codecTransposedConvCase,
      kernel: codec('control_codec_transposed_history_off_by_one'),
    },
    {
      description: 'off-by-one update: the codec history keeps rows shifted one row back',
      kernelCase: codecConvCase,
      kernel: codec('control_codec_history_update_off_by_one'),
    },
    {
      description: "wrong tap order: the tiled codec conv applies each channel's kernel flipped",
      kernelCase: codecConvTiledCase,
      kernel: codec('control_codec_conv_tiled_taps_reversed'),
    },
    {
      description: 'off-by-one history: the tiled codec conv reads its carried rows one row further back',
      kernelCase: codecConvTiledCase,
      kernel: codec('control_codec_conv_tiled_history_off_by_one'),
    },
    {
      description:
        'batch-dependent order: the tiled codec conv adds its channel chunks last to first beside other lanes',
      kernelCase: codecConvTiledCase,
      kernel: codec('control_codec_conv_tiled_chunks_reversed_with_lanes'),
    },
    {
      description: 'off-by-one history: the tiled codec transposed conv reads its carried row one row too far back',
      kernelCase: codecTransposedConvTiledCase,
      kernel: codec('control_codec_transposed_tiled_history_off_by_one'),
    },
    {
      description: "wrong tap order: the tensor-core codec conv applies each channel's kernel flipped",
      kernelCase: codecConvMmaCase,
      kernel: codec('control_codec_conv_mma_taps_reversed'),
    },
    {
      description: 'off-by-one history: the tensor-core codec conv reads its carried rows one row further back',
      kernelCase: codecConvMmaCase,
      kernel: codec('control_codec_conv_mma_history_off_by_one'),
    },
    {
      description:
        'batch-dependent order: the tensor-core codec conv adds its channel groups last to first beside other lanes',
      kernelCase: codecConvMmaCase,
      kernel: codec('control_codec_conv_mma_groups_reversed_with_lanes'),
    },
    {
      description: "wrong combine order: the split tensor-core conv adds its groups' sums last to first after group 0",
      kernelCase: codecConvMmaCase,
      kernel: codec('control_codec_conv_combine_reversed'),
    },
    {
      description: 'off-by-one rows: the staged tensor-core conv copies every input row one row further back',
      kernelCase: codecConvMmaStagedCase,
      kernel: codec('control_codec_conv_mma_staged_history_off_by_one'),
    },
    {
      description:
        'batch-dependent order: the staged tensor-core conv adds its channel groups last to first beside other lanes',
      kernelCase: codecConvMmaStagedCase,
      kernel: codec('control_codec_conv_mma_staged_groups_reversed_with_lanes'),
    },
    {
      description: "wrong formula: the tensor-core conv's staging applies Snake without its square",
      kernelCase: codecConvMmaStagedCase,
      kernel: codec('control_codec_conv_stage_snake_unsquared'),
    },
    {
      description: "wrong tap order: the tensor-core transposed conv meets each phase's taps flipped",
      kernelCase: codecTransposedConvMmaCase,
      kernel: codec('control_codec_conv_mma_taps_reversed'),
    },
    {
      description: 'wrong formula: Snake adds sin(αx)/α, not its square',
      kernelCase: codecSnakeCase,
      kernel: codec('control_codec_snake_unsquared'),
    },
    {
      description: "wrong tap order: the narrow codec conv applies each channel's kernel flipped",
      kernelCase: codecNarrowConvCase,
      kernel: codec('control_codec_conv_narrow_taps_reversed'),
    },
    {
      description: 'off-by-one history: the narrow codec conv reads its carried rows one row further back',
      kernelCase: codecNarrowConvCase,
      kernel: codec('control_codec_conv_narrow_history_off_by_one'),
    },
  ];
}

function deltaNetAndMoeControls(): Control[] {
  return [
    {
      description: "wrong rounding point: the DeltaNet combine's conv reads q|k|v's fp32 sum, not its bf16 store",
      kernelCase: deltaNetCombineCase,
      kernel: { family: 'delta_net_combine_controls', name: 'control_delta_net_combine_conv_input_unrounded' },
    },
    {
      description: 'wrong columns: the fused q|k|v prepare norms and rotates a gated query head from its gate half',
      kernelCase: attentionQkvPrepareCase,
      kernel: { family: 'attention_qkv_prepare_controls', name: 'control_attention_qkv_prepare_gate_as_query' },
    },
    {
      description: 'wrong formula: the DeltaNet gates take softplus(a), leaving out dt_bias',
      kernelCase: deltaNetGatesCase,
      kernel: { family: 'delta_net_controls', name: 'control_delta_net_gates_without_dt_bias' },
    },
    {
      description: 'skipped rounding: the DeltaNet gates leave beta in fp32 instead of rounding it to bf16',
      kernelCase: deltaNetGatesCase,
      kernel: { family: 'delta_net_controls', name: 'control_delta_net_gates_beta_unrounded' },
    },
    {
      description:
        "wrong block order: the wide-tile gate|up GEMM adds the K blocks' sums from the last block to the first",
      kernelCase: moeGateUpFp8WideCase,
      kernel: { family: 'moe_controls', name: 'control_moe_gate_up_wide_blocks_descending' },
    },
    {
      description: "skipped pair: the wide-tile down GEMM never writes a wide tile's last pair",
      kernelCase: moeDownFp8WideCase,
      kernel: { family: 'moe_controls', name: 'control_moe_down_wide_skips_last_pair' },
    },
    {
      description: "off-by-one count: the MoE grouping's last tile of each expert holds one pair fewer",
      kernelCase: moeGroupingCase,
      kernel: { family: 'moe_route_controls', name: 'control_moe_group_drops_last_pair' },
    },
    {
      description: "wrong order: the MoE grouping lists an expert's pairs in descending slot order",
      kernelCase: moeGroupingCase,
      kernel: { family: 'moe_route_controls', name: 'control_moe_group_expert_reversed' },
    },
    {
      description: "swapped fragments: the expert re-layout trades each chunk's words 1 and 2",
      kernelCase: moePackCase,
      kernel: { family: 'moe_pack_controls', name: 'control_moe_pack_fragments_swapped' },
    },
    {
      description: "off-by-one count: the expert scales' gather leaves each run's last word unwritten",
      kernelCase: moeGatherWordsCase,
      kernel: { family: 'moe_pack_controls', name: 'control_moe_gather_words_short' },
    },
  ];
}

function codecTransformerControls(): Control[] {
  const transformer = (name: string) => ({ family: 'codec_transformer_controls', name });
  return [
    {
      description: 'off-by-one window: the codec attention attends window − 1 positions',
      kernelCase: codecTransformerAttentionCase,
      kernel: transformer('control_codec_attention_window_short'),
    },
    {
      description: 'off-by-one slot: the codec ring update writes each kept row one ring slot further',
      kernelCase: codecTransformerRingCase,
      kernel: transformer('control_codec_ring_update_slot_off'),
    },
    {
      description: 'off-by-one position: the codec RoPE turns each row by position − 1',
      kernelCase: codecTransformerRopeCase,
      kernel: transformer('control_codec_rope_position_behind'),
    },
    {
      description: 'batch-dependent order: the codec attention sums its keys last to first beside other lanes',
      kernelCase: codecTransformerStreamCase,
      kernel: transformer('control_codec_attention_keys_reversed_with_lanes'),
    },
  ];
}

function codecRowsControls(): Control[] {
  const codecRows = (name: string) => ({ family: 'codec_rows_controls', name });
  return [
    {
      description: "wrong tap order: the codec depthwise conv applies each channel's kernel flipped",
      kernelCase: codecDepthwiseConvCase,
      kernel: codecRows('control_codec_depthwise_taps_reversed'),
    },
    {
      description: 'off-by-one history: the codec depthwise conv reads its carried rows one row further back',
      kernelCase: codecDepthwiseConvCase,
      kernel: codecRows('control_codec_depthwise_history_off_by_one'),
    },
    {
      description: 'wrong formula: the codec LayerNorm divides the variance by width − 1',
      kernelCase: codecLayerNormCase,
      kernel: codecRows('control_codec_layer_norm_unbiased'),
    },
    {
      description: 'wrong order: the quantizer adds the residual codebooks to the semantic one, one by one',
      kernelCase: codecQuantizerCase,
      kernel: codecRows('control_codec_quantizer_semantic_first'),
    },
    {
      description: 'wrong tie-break: the quantizer encode gives an exact tie to the later entry',
      kernelCase: codecQuantizeEncodeCase,
      kernel: { family: 'codec_quantize_controls', name: 'control_codec_quantizer_encode_ties_last' },
    },
    {
      description: 'skipped update: the quantizer encode never subtracts a codebook from the residual',
      kernelCase: codecQuantizeEncodeCase,
      kernel: { family: 'codec_quantize_controls', name: 'control_codec_quantizer_encode_residual_kept' },
    },
  ];
}
