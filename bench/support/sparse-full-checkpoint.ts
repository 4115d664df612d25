// The full preset's checkpoint as the load's check sees it: config, tokenizer, index and every shard with its real
// header, the data left unwritten (sparse files), so a machine without 38 GB of disk can time what a load does before
// it reads a weight. Shards are cut where synth cuts them (MAX_SHARD_BYTES, tensors in weight-map order).
import fs from 'node:fs';
import path from 'node:path';
import { buildHeader } from '../../src/checkpoint/safetensors-format.ts';
import { INDEX_FILE_NAME } from '../../src/checkpoint/safetensors-reader.ts';
import { shardFileName } from '../../src/checkpoint/safetensors-writer.ts';
import { type DType, tensorByteLength } from '../../src/checkpoint/tensor.ts';
import { CONFIG_FILE, configToJson } from '../../src/model/config.ts';
import { MAX_SHARD_BYTES, planCheckpoint, tokenizerFacts } from '../../src/synth/plan.ts';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';

interface ShardTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly byteLength: number;
}

/** Writes it into `dir` (created) unless an index is there already. */
export function writeSparseFullCheckpoint(dir: string): void {
  if (fs.existsSync(path.join(dir, INDEX_FILE_NAME))) return;
  fs.mkdirSync(dir, { recursive: true });
  const tokenizer = buildSyntheticTokenizerFiles();
  const plan = planCheckpoint('full', 'fp8', tokenizerFacts(tokenizer.tokenizerJson));
  fs.writeFileSync(path.join(dir, CONFIG_FILE), JSON.stringify(configToJson(plan.config), null, 2));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), tokenizer.tokenizerJson);
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), tokenizer.tokenizerConfigJson);
  const shards: ShardTensor[][] = [[]];
  let shardBytes = 0;
  for (const spec of plan.specs) {
    const byteLength = tensorByteLength(spec.dtype, spec.shape);
    if (shardBytes + byteLength > MAX_SHARD_BYTES.full && shards.at(-1)!.length > 0) {
      shards.push([]);
      shardBytes = 0;
    }
    shards.at(-1)!.push({ name: spec.name, dtype: spec.dtype, shape: spec.shape, byteLength });
    shardBytes += byteLength;
  }
  const weightMap: Record<string, string> = {};
  shards.forEach((tensors, index) => {
    const file = shardFileName(index, shards.length);
    const { bytes } = buildHeader(tensors, { format: 'pt' });
    const fd = fs.openSync(path.join(dir, file), 'w');
    try {
      fs.writeSync(fd, bytes);
      fs.ftruncateSync(fd, bytes.byteLength + tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0));
    } finally {
      fs.closeSync(fd);
    }
    for (const tensor of tensors) weightMap[tensor.name] = file;
  });
  const index = { metadata: { total_size: 0 }, weight_map: weightMap };
  fs.writeFileSync(path.join(dir, INDEX_FILE_NAME), JSON.stringify(index, null, 2));
}
