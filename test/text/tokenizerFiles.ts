// Test helper: a temporary checkpoint folder holding the synthetic tokenizer files, written once per process and
// removed when it exits.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';

let folder: string | undefined;

export function syntheticTokenizerDir(): string {
  if (folder === undefined) {
    const made = mkdtempSync(join(tmpdir(), 'drama3-tokenizer-'));
    folder = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
    const files = buildSyntheticTokenizerFiles();
    writeFileSync(join(folder, 'tokenizer.json'), files.tokenizerJson);
    writeFileSync(join(folder, 'tokenizer_config.json'), files.tokenizerConfigJson);
  }
  return folder;
}
