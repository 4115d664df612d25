// Every kernel the contract holds (contract.test.ts runs them; timeCases.ts times their host side).
import {
  attentionBackboneCase,
  attentionOtherCase,
  attentionPrepareBackboneCase,
  attentionPrepareOtherCase,
} from './attentionCases.ts';
import { attentionQkvPrepareCase } from './attentionQkvPrepareCases.ts';
import {
  codecConvCase,
  codecConvF16Case,
  codecConvMmaCase,
  codecConvMmaStagedCase,
  codecConvTiledCase,
  codecConvTiledF16Case,
  codecNarrowConvCase,
  codecNarrowConvF16Case,
} from './codecConvCases.ts';
import { codecQuantizeEncodeCase } from './codecQuantizeEncodeCases.ts';
import { codecQuantizerCase } from './codecQuantizerCases.ts';
import { codecDepthwiseConvCase, codecLayerNormCase } from './codecRowsCases.ts';
import { codecSnakeCase } from './codecSnakeCases.ts';
import { codecDecoderBlockCase } from './codecStreamCases.ts';
import {
  codecTransformerAttentionCase,
  codecTransformerRingCase,
  codecTransformerRopeCase,
} from './codecTransformerCases.ts';
import { codecTransformerRmsNormCase, codecTransformerSwiGluCase } from './codecTransformerRowCases.ts';
import { codecTransformerStreamCase } from './codecTransformerStreamCases.ts';
import {
  codecTransposedConvCase,
  codecTransposedConvF16Case,
  codecTransposedConvMmaCase,
  codecTransposedConvTiledCase,
  codecTransposedConvTiledF16Case,
} from './codecTransposedConvCases.ts';
import type { KernelCase } from './contract.ts';
import { deltaNetConvCase, deltaNetGatesCase } from './deltaNetCases.ts';
import { deltaNetCombineCase } from './deltaNetCombineCases.ts';
import { deltaNetRecurrenceCase } from './deltaNetRecurrenceCases.ts';
import { gemmBf16Case, gemmFp32Case, gemmSegmentsCase } from './gemmCases.ts';
import { gemmCase, gemvCase, gemvOtherTuningsCase, routerCase, swigluCase } from './mathCases.ts';
import { moeBlockBf16Case } from './moeBf16Cases.ts';
import {
  moeBlockFp8Case,
  moeCombineCase,
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
import {
  addZeroCentredRmsNormCase,
  embeddingGatherCase,
  frameRowCase,
  gatedRmsNormCase,
  plainRmsNormCase,
  ropeInterleavedCase,
  ropeNeoxCase,
  zeroCentredRmsNormCase,
} from './rowCases.ts';
import { sampleCodeBf16Case, sampleCodeCase, sampleMainBf16Case, sampleMainCase } from './samplerCases.ts';
import { swigluCombineCase } from './swigluCombineCases.ts';
import { towerInputCase } from './towerInputCases.ts';

export const kernelCases: readonly KernelCase[] = [
  zeroCentredRmsNormCase,
  plainRmsNormCase,
  gatedRmsNormCase,
  addZeroCentredRmsNormCase,
  towerInputCase,
  embeddingGatherCase,
  frameRowCase,
  ropeNeoxCase,
  ropeInterleavedCase,
  swigluCase,
  swigluCombineCase,
  routerCase,
  gemvCase,
  gemvOtherTuningsCase,
  gemmCase,
  sampleMainCase,
  sampleCodeCase,
  sampleMainBf16Case,
  sampleCodeBf16Case,
  attentionPrepareBackboneCase,
  attentionPrepareOtherCase,
  attentionBackboneCase,
  attentionOtherCase,
  moeGroupingCase,
  moeGateUpFp8Case,
  moeGateUpFp8RoutedCase,
  moeDownFp8Case,
  moeGateUpFp8WideCase,
  moeDownFp8WideCase,
  moeCombineCase,
  moeBlockFp8Case,
  moeBlockBf16Case,
  moePackCase,
  moeGatherWordsCase,
  gemmBf16Case,
  gemmFp32Case,
  gemmSegmentsCase,
  quantizeE4m3Case,
  routerQuantizeCase,
  deltaNetConvCase,
  deltaNetGatesCase,
  deltaNetCombineCase,
  attentionQkvPrepareCase,
  deltaNetRecurrenceCase,
  embedRecordsCase,
  gatherCodesCase,
  slotRecordsCase,
  addCase,
  concatCase,
  codecSnakeCase,
  codecConvCase,
  codecConvF16Case,
  codecTransposedConvCase,
  codecTransposedConvF16Case,
  codecConvTiledCase,
  codecConvTiledF16Case,
  codecConvMmaCase,
  codecConvMmaStagedCase,
  codecTransposedConvTiledCase,
  codecTransposedConvTiledF16Case,
  codecTransposedConvMmaCase,
  codecDecoderBlockCase,
  codecTransformerRmsNormCase,
  codecTransformerSwiGluCase,
  codecTransformerRopeCase,
  codecTransformerAttentionCase,
  codecTransformerRingCase,
  codecTransformerStreamCase,
  codecNarrowConvCase,
  codecNarrowConvF16Case,
  codecDepthwiseConvCase,
  codecLayerNormCase,
  codecQuantizerCase,
  codecQuantizeEncodeCase,
];
