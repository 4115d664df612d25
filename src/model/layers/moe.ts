// Loads a sparse MoE block: router, routed experts (per expert bf16 or FP8 blocks on disk, or transformers' fused
// [E, 2I, H] / [E, H, I] form, split here once into views of the stored elements), shared expert and its gate.
import type { MoeWeights, SwiGluWeights } from '../../backend/types.ts';
import type { TextConfig } from '../config.ts';
import { storedRows, type WeightSource } from '../tensor-source.ts';
import type { MoeNames } from '../weights.ts';

async function fusedExperts<B>(
  source: WeightSource<B>,
  names: MoeNames,
  text: TextConfig,
): Promise<SwiGluWeights<B>[]> {
  const { experts, expertIntermediate: inner, hiddenSize: hidden } = text;
  const gateUp = await source.stored(names.fusedGateUpProj);
  const down = await source.stored(names.fusedDownProj);
  // [E, 2I, H] viewed as [E·2I, H] rows: expert e's gate rows then its up rows.
  const gateUpRows = { ...gateUp, shape: [experts * 2 * inner, hidden] };
  const downRows = { ...down, shape: [experts * hidden, inner] };
  const result: SwiGluWeights<B>[] = [];
  for (let e = 0; e < experts; e++) {
    result.push({
      gate: source.upload(storedRows(gateUpRows, e * 2 * inner, inner)),
      up: source.upload(storedRows(gateUpRows, e * 2 * inner + inner, inner)),
      down: source.upload(storedRows(downRows, e * hidden, hidden)),
    });
  }
  return result;
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
