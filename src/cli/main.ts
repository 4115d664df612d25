// The `drama3` command line: one file per command under src/cli/, each exporting a register function.
import { Command } from 'commander';
import { isDramaError } from '../errors.ts';
import { registerEncode } from './encode.ts';
import { registerInspect } from './inspect.ts';
import { registerSay } from './say.ts';
import { registerServe } from './serve.ts';
import { registerSynth } from './synth.ts';
import { registerVoices } from './voices.ts';

const program = new Command();
program
  .name('drama3')
  .description('Inference server for Fish Audio Drama 3 text-to-speech')
  .showHelpAfterError()
  .enablePositionalOptions();

// Each command file adds itself here with one line.
registerServe(program);
registerSay(program);
registerEncode(program);
registerSynth(program);
registerInspect(program);
registerVoices(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // A named refusal is the user's to read, not a crash: print its code and message, no stack.
  if (!isDramaError(error)) throw error;
  process.stderr.write(`drama3: ${error.code}: ${error.message}\n`);
  process.exitCode = 1;
}
