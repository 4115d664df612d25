import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Command } from 'commander';
import { registerSynth, runSynth } from '../../src/cli/synth.ts';
import { createProgress, formatBytes } from '../../src/shared/progress.ts';

async function synth(flags: Parameters<typeof runSynth>[0]): Promise<string[]> {
  const lines: string[] = [];
  assert.equal(await runSynth(flags, (line) => lines.push(line)), 0);
  return lines;
}

describe('drama3 synth', () => {
  test('--preset full --dry-run lists the full geometry without writing: counts, bytes by dtype, ~35e9 parameters', async () => {
    const lines = await synth({ preset: 'full', seed: 0, experts: 'fp8', dryRun: true });
    assert.match(lines[0]!, /dry run: nothing is written/);
    const [, tensors, parameters] = /^(\d+) tensors, (\d+) parameters/.exec(lines[1]!)!;
    // 40 layers × 256 experts × 3 weights, each with a scale, plus the bf16 tensors.
    assert.ok(Number(tensors) > 2 * 30720);
    assert.ok(Math.abs(Number(parameters) - 35e9) < 0.5e9, parameters);
    assert.ok(
      lines.some((line) => /F8_E4M3\s+30720 tensors\s+30\.0 GiB/.test(line)),
      lines.join('\n'),
    );
    assert.ok(lines.some((line) => /F32\s+30720 tensors/.test(line)));
  });

  test('--list adds one line per tensor, bf16 experts have no scales', async () => {
    const lines = await synth({ preset: 'tiny', seed: 0, experts: 'bf16', dryRun: true, list: true });
    const count = Number(/^(\d+) tensors/.exec(lines[1]!)![1]);
    const tensorLines = lines.filter((line) => /^ {2}\S+ (BF16|F32|F8_E4M3) \[/.test(line));
    assert.equal(tensorLines.length, count);
    assert.ok(tensorLines.includes('  model.layers.0.mlp.experts.0.gate_proj.weight BF16 [32, 64]'));
    assert.ok(!lines.some((line) => line.includes('_scale_inv')));
  });

  test('--threads takes a positive integer and names the default in --help', async () => {
    const program = new Command().exitOverride();
    registerSynth(program);
    const synthCommand = program.commands.find((command) => command.name() === 'synth')!;
    synthCommand.exitOverride().configureOutput({ writeErr: () => undefined });
    for (const value of ['0', '-1', '1.5', 'many']) {
      assert.throws(() => program.parse(['synth', '--threads', value, '--dry-run'], { from: 'user' }), {
        code: 'commander.invalidArgument',
      });
    }
    assert.match(synthCommand.helpInformation(), /--threads <n>[\s\S]*the same bytes for any count/);
  });

  test('refuses to write without --out', async () => {
    await assert.rejects(
      runSynth({ preset: 'tiny', seed: 0, experts: 'fp8' }, () => undefined),
      {
        code: 'SYNTH_NO_OUT',
      },
    );
  });
});

describe('progress', () => {
  test('off a terminal prints one line per tenth and a final line', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream;
    const progress = createProgress('writing', { unit: 'bytes', stream });
    for (let done = 0; done <= 2048; done += 64) progress.update(done, 2048);
    progress.stop();
    assert.equal(written.length, 11);
    assert.equal(written[0], 'writing: 0% (0 B of 2.0 KiB)\n');
    assert.equal(written.at(-1), 'writing: 100% (2.0 KiB of 2.0 KiB)\n');
  });

  test('a byte count can show its rate since the display began', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream;
    const progress = createProgress('loading', { unit: 'bytes', stream, rate: true });
    progress.update(0, 4096);
    const start = performance.now();
    while (performance.now() - start < 2);
    progress.update(4096, 4096);
    progress.stop();
    assert.match(written.at(-1)!, /^loading: 100% \(4\.0 KiB of 4\.0 KiB, \d+\.\d\d GB\/s\)\n$/);
  });

  test('formats bytes in binary units', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(3 * 2 ** 30), '3.0 GiB');
  });
});
