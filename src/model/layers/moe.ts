// Loads a sparse MoE block: router, routed experts (per expert bf16 or FP8 blocks on disk, or transformers' fused
// [E, 2I, H] / [E, H, I] form, split here once), shared expert and its gate.
import type { MoeWeights, SwiGluWeights } from '../../backend/types.ts';
import type { TextConfig } from '../config.ts';
import type { TensorSource } from '../tensor-source.ts';
import type { MoeNames } from '../weights.ts';

async function fusedExperts<B>(
  source: TensorSource<B>,
  names: MoeNames,
  text: TextConfig,
): Promise<SwiGluWeights<B>[]> {
  const { experts, expertIntermediate: inner, hiddenSize: hidden } = text;
  const gateUp = await source.float32(names.fusedGateUpProj, [experts, 2 * inner, hidden]);
  const down = await source.float32(names.fusedDownProj, [experts, hidden, inner]);
  const result: SwiGluWeights<B>[] = [];
  for (let e = 0; e < experts; e++) {
    const base = e * 2 * inner * hidden;
    result.push({
      gate: source.denseFrom(gateUp.slice(base, base + inner * hidden), inner, hidden),
      up: source.denseFrom(gateUp.slice(base + inner * hidden, base + 2 * inner * hidden), inner, hidden),
      down: source.denseFrom(down.slice(e * hidden * inner, (e + 1) * hidden * inner), hidden, inner),
    });
  }
  return result;
}

export async function loadMoe<B>(source: TensorSource<B>, names: MoeNames, text: TextConfig): Promise<MoeWeights<B>> {
  const hidden = text.hiddenSize;
  let experts: SwiGluWeights<B>[];
  if (source.has(names.fusedGateUpProj)) {
    experts = await fusedExperts(source, names, text);
  } else {
    experts = [];
    for (let e = 0; e < text.experts; e++)
      experts.push(await source.swiGlu(names.expert(e), text.expertIntermediate, hidden));
  }
  return {
    router: await source.linear(names.router, text.experts, hidden),
    experts,
    topK: text.expertsPerToken,
    shared: await source.swiGlu(names.sharedExpert, text.sharedExpertIntermediate, hidden),
    sharedGate: await source.linear(names.sharedExpertGate, 1, hidden),
  };
}
