// Loads a sparse MoE block: router, routed experts (per expert bf16 or FP8 blocks on disk, or transformers' fused
// [E, 2I, H] / [E, H, I] form, split here once into row blocks of the stored tensors), shared expert and its gate.
import type { MoeWeights, SwiGluWeights } from '../../backend/types.ts';
import type { TextConfig } from '../config.ts';
import type { WeightSource } from '../tensor-source.ts';
import type { MoeNames } from '../weights.ts';

async function fusedExperts<B>(
  source: WeightSource<B>,
  names: MoeNames,
  text: TextConfig,
): Promise<SwiGluWeights<B>[]> {
  const { experts, expertIntermediate: inner, hiddenSize: hidden } = text;
  const each = Array.from({ length: experts }, (_, e) => e);
  // [E, 2I, H] viewed as [E·2I, H] rows: expert e's gate rows then its up rows.
  const gateUp = await source.rowBlocks(
    names.fusedGateUpProj,
    [experts * 2 * inner, hidden],
    each.flatMap((e) => [
      { first: e * 2 * inner, count: inner },
      { first: e * 2 * inner + inner, count: inner },
    ]),
  );
  const down = await source.rowBlocks(
    names.fusedDownProj,
    [experts * hidden, inner],
    each.map((e) => ({ first: e * hidden, count: hidden })),
  );
  return each.map((e) => ({ gate: gateUp[2 * e]!, up: gateUp[2 * e + 1]!, down: down[e]! }));
}

export async function loadMoe<B>(source: WeightSource<B>, names: MoeNames, text: TextConfig): Promise<MoeWeights<B>> {
  let experts: SwiGluWeights<B>[];
  if (source.has(names.fusedGateUpProj)) {
    experts = await fusedExperts(source, names, text);
  } else {
    experts = [];
    for (let e = 0; e < text.experts; e++) experts.push(await source.swiGlu(names.expert(e)));
  }
  return {
    router: await source.linear(names.router),
    experts,
    topK: text.expertsPerToken,
    shared: await source.swiGlu(names.sharedExpert),
    sharedGate: await source.linear(names.sharedExpertGate),
  };
}
