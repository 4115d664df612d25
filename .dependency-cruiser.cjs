// Import direction of src/ (ARCHITECTURE.md): cli → server → engine | voices | synth → model | codec | text →
// backend | checkpoint | audio → shared | numeric | threads (and errors.ts). `npm run check:imports` fails on any
// rule below; siblings of one layer may import each other, but never in a cycle.

const lowest = '^src/(shared|numeric|threads)/';
const storage = '^src/(backend|checkpoint|audio)/';
const speech = '^src/(model|codec|text)/';

/** A rule that `from` files must not import `to` files. */
function forbid(name, comment, from, to) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: to } };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Imports run one way: a cycle means two modules belong together or a shared piece belongs lower.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    forbid(
      'lowest-imports-nothing-above',
      'Shared constants, numeric conversions and thread helpers sit below every other module.',
      lowest,
      '^src/(backend|checkpoint|audio|model|codec|text|engine|voices|synth|server|cli)/',
    ),
    forbid(
      'storage-below-speech',
      'The backend, checkpoint formats and audio formats know nothing of the model, codec, text or anything above.',
      storage,
      '^src/(model|codec|text|engine|voices|synth|server|cli)/',
    ),
    forbid(
      'speech-below-hosts',
      'The model, codec and text front end do not import the engine, voices, synth, server or command line.',
      speech,
      '^src/(engine|voices|synth|server|cli)/',
    ),
    forbid(
      'engine-not-voices',
      'The engine and the voice catalog are siblings: shared pieces live lower.',
      '^src/engine/',
      '^src/(voices|synth|server|cli)/',
    ),
    forbid(
      'voices-not-engine',
      'The voice catalog and the engine are siblings: shared pieces live lower.',
      '^src/voices/',
      '^src/(engine|synth|server|cli)/',
    ),
    forbid(
      'synth-below-server',
      'Synthetic checkpoints are written from the model, codec and text modules only.',
      '^src/synth/',
      '^src/(engine|voices|server|cli)/',
    ),
    forbid(
      'server-not-cli',
      'The HTTP server is started by the command line, never the other way.',
      '^src/server/',
      '^src/cli/',
    ),
    forbid(
      'errors-import-nothing',
      'errors.ts is imported by every module, so it imports none.',
      '^src/errors\\.ts$',
      '^src/',
    ),
    forbid(
      'src-not-tests',
      'Shipped code does not import tests, benchmarks, tools or scripts.',
      '^src/',
      '^(test|bench|tools|scripts)/',
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
