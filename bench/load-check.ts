// The seconds a load spends on a checkpoint before it reads any weight: the config, opening the safetensors index
// and every shard header (with the repeated-key walks), the weight check against the weight map, the candidate ids,
// and each tensor's stored form as the streamed load takes it. No weight is read and no GPU is used, so any machine
// can time it on a checkpoint written before (e.g. the serve bench's full one). Each part is the median of --rounds
// rounds in this one process; run it in several processes to see the spread. Prints one table. --sparse-full DIR
// first writes the full preset's headers there with no data (bench/support/sparse-full-checkpoint.ts) and times that.
// Usage: tsx bench/load-check.ts (--model DIR | --sparse-full DIR) [--rounds 7]
import { parseArgs } from 'node:util';
import { SafetensorsCheckpoint } from '../src/checkpoint/safetensors-reader.ts';
import { candidateIds } from '../src/model/candidates.ts';
import { loadConfig } from '../src/model/config.ts';
import { checkedStored } from '../src/model/tensor-source.ts';
import { assertWeightsMatch, checkWeights } from '../src/model/weights-check.ts';
import { markdownTable } from './support/output.ts';
import { writeSparseFullCheckpoint } from './support/sparse-full-checkpoint.ts';

const { values } = parseArgs({
  options: { model: { type: 'string' }, 'sparse-full': { type: 'string' }, rounds: { type: 'string', default: '7' } },
});
const dir = values.model ?? values['sparse-full'];
const rounds = Number(values.rounds);
if (dir === undefined || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: tsx bench/load-check.ts (--model DIR | --sparse-full DIR) [--rounds N]');
  process.exit(2);
}
if (values['sparse-full'] !== undefined) writeSparseFullCheckpoint(dir);

const PARTS = ['config', 'open', 'weight check', 'candidates', 'stored forms', 'in all'] as const;
const times = new Map<string, number[]>(PARTS.map((part) => [part, []]));
for (let round = 0; round < rounds; round++) {
  const started = performance.now();
  let lapped = started;
  const lap = (part: string) => {
    const now = performance.now();
    times.get(part)!.push(now - lapped);
    lapped = now;
  };
  const loaded = await loadConfig(dir);
  lap('config');
  const checkpoint = await SafetensorsCheckpoint.open(dir);
  lap('open');
  try {
    const check = checkWeights(loaded.config, checkpoint);
    assertWeightsMatch(check, dir);
    lap('weight check');
    await candidateIds(dir, loaded.config);
    lap('candidates');
    for (const spec of check.specs) if (checkpoint.has(spec.name)) checkedStored(checkpoint.info(spec.name), spec);
    lap('stored forms');
  } finally {
    await checkpoint.close();
  }
  times.get('in all')!.push(performance.now() - started);
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`the load's check of ${dir}, the median of ${rounds} rounds in one process`);
const rows = [...times].map(([part, values]) => [part, median(values).toFixed(0)]);
console.log(markdownTable(['part', 'ms'], rows).join('\n'));
