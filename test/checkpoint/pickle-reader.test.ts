// The restricted pickle reader: Python-made pickles read correctly; malicious ones are refused by name during the
// scan, before a single allowed function has been called.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AllowedGlobal, PickleDict, readPickle } from '../../src/checkpoint/pickle-reader.ts';
import { PickleWriter } from '../../src/checkpoint/pickle-writer.ts';
import { DramaError } from '../../src/errors.ts';

const fromHex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, 'hex'));
const ascii = (text: string): number[] => [...Buffer.from(text, 'latin1')];
const refused = (code: string, mention?: string) => (error: unknown) =>
  error instanceof DramaError && error.code === code && (mention === undefined || error.message.includes(mention));

/** An allow-list whose OrderedDict counts its calls, to prove nothing ran. */
function spyingGlobals(): { globals: Map<string, AllowedGlobal>; calls: () => number } {
  let calls = 0;
  const globals = new Map<string, AllowedGlobal>([
    [
      'collections.OrderedDict',
      {
        call: () => {
          calls++;
          return new PickleDict();
        },
      },
    ],
    ['torch.FloatStorage', { value: 'float storage' }],
  ]);
  return { globals, calls: () => calls };
}

function read(
  bytes: Uint8Array | number[],
  globals = spyingGlobals().globals,
  persistentLoad?: (pid: unknown) => unknown,
) {
  return readPickle(Uint8Array.from(bytes), { globals, persistentLoad, source: 'test.pkl' });
}

describe('pickle reader', () => {
  it('reads a protocol 2 OrderedDict with _metadata as Python writes it', () => {
    // pickle.dumps(OrderedDict(a=[1, 2.5, None, True, False, 'x', -3, 300, 70000, -70000, 2**40, -(2**70)],
    //   t=(1, (2, 3), ())) with _metadata = OrderedDict([('', {'version': 1})]), protocol=2)
    const bytes = fromHex(
      '800263636f6c6c656374696f6e730a4f726465726564446963740a7100295271012858010000006171025d7103284b01474004000000' +
        '0000004e888958010000007871044afdffffff4d2c014a701101004a90eefeff8a060000000000018a0900000000000000' +
        '00c06558010000007471054b014b024b0386710629877107757d710858090000005f6d65746164617461710968002952710a580000' +
        '0000710b7d710c580700000076657273696f6e710d4b01737373622e',
    );
    const root = read(bytes) as PickleDict;
    assert.ok(root instanceof PickleDict);
    assert.deepEqual(root.get('a'), [1, 2.5, null, true, false, 'x', -3, 300, 70000, -70000, 2 ** 40, -(2n ** 70n)]);
    assert.deepEqual(root.get('t'), [1, [2, 3], []]);
    const metadata = root.attributes.get('_metadata') as PickleDict;
    assert.deepEqual((metadata.get('') as PickleDict).get('version'), 1);
  });

  it('reads protocol 4 framing, memoised strings and bytes', () => {
    // pickle.dumps({'bytes': b'by', 'shared': ['s', 's'], 'k': 'v'}, protocol=4)
    const bytes = fromHex(
      '8004952d000000000000007d94288c0562797465739443026279948c06736861726564945d94288c0173946805658c016b948c017694752e',
    );
    const root = read(bytes) as PickleDict;
    assert.deepEqual(root.get('bytes'), Uint8Array.from([0x62, 0x79]));
    assert.deepEqual(root.get('shared'), ['s', 's']);
    assert.equal(root.get('k'), 'v');
  });

  it('reads back what the writer writes', () => {
    const writer = new PickleWriter().global('collections', 'OrderedDict').emptyTuple().reduce().mark();
    writer
      .string('ints')
      .mark()
      .integer(0)
      .integer(255)
      .integer(256)
      .integer(65536)
      .integer(-1)
      .integer(2 ** 31);
    writer
      .integer(-(2 ** 31) - 1)
      .integer(Number.MAX_SAFE_INTEGER)
      .integer(-128)
      .integer(128)
      .tuple();
    writer.string('shape').integerTuple([2, 3]).string('empty').integerTuple([]).string('flag').boolean(false);
    writer.string('nothing').none().string('ünïcode').string('✓').setItems();
    const root = read(writer.finish()) as PickleDict;
    assert.deepEqual(root.get('ints'), [
      0,
      255,
      256,
      65536,
      -1,
      2 ** 31,
      -(2 ** 31) - 1,
      Number.MAX_SAFE_INTEGER,
      -128,
      128,
    ]);
    assert.deepEqual(root.get('shape'), [2, 3]);
    assert.deepEqual(root.get('empty'), []);
    assert.equal(root.get('flag'), false);
    assert.equal(root.get('nothing'), null);
    assert.equal(root.get('ünïcode'), '✓');
  });

  it('refuses os.system by name before building anything', () => {
    const { globals, calls } = spyingGlobals();
    // An allowed call first, then GLOBAL os.system: the scan refuses before the allowed call runs.
    const bytes = [0x80, 2, 0x28, ...ascii('ccollections\nOrderedDict\n'), 0x29, 0x52];
    bytes.push(...ascii('cos\nsystem\n'), ...ascii('X'), 4, 0, 0, 0, ...ascii('echo'), 0x85, 0x52, 0x74, 0x2e);
    assert.throws(() => read(bytes, globals), refused('PICKLE_GLOBAL_REFUSED', 'os.system'));
    assert.equal(calls(), 0);
  });

  it('refuses builtins.eval named through STACK_GLOBAL and memoised strings', () => {
    const { globals, calls } = spyingGlobals();
    const bytes = [0x80, 4, 0x28, ...ascii('ccollections\nOrderedDict\n'), 0x29, 0x52];
    bytes.push(0x8c, 8, ...ascii('builtins'), 0x94, 0x8c, 4, ...ascii('eval'), 0x94, 0x93);
    bytes.push(0x8c, 1, ...ascii('1'), 0x85, 0x52, 0x74, 0x2e);
    assert.throws(() => read(bytes, globals), refused('PICKLE_GLOBAL_REFUSED', 'builtins.eval'));
    // The same names fetched back from the memo (BINGET) are resolved too.
    const viaMemo = [0x80, 4, 0x8c, 8, ...ascii('builtins'), 0x94, 0x8c, 4, ...ascii('eval'), 0x94, 0x29];
    viaMemo.push(0x68, 0, 0x68, 1, 0x93, 0x2e);
    assert.throws(() => read(viaMemo, globals), refused('PICKLE_GLOBAL_REFUSED', 'builtins.eval'));
    assert.equal(calls(), 0);
  });

  it('refuses a STACK_GLOBAL whose names are not plain strings', () => {
    const bytes = [0x80, 4, 0x8c, 1, ...ascii('a'), 0x4b, 1, 0x93, 0x2e];
    assert.throws(() => read(bytes), refused('PICKLE_GLOBAL_REFUSED', 'not named by two strings'));
  });

  it('refuses every opcode outside the state-dict set by name', () => {
    const cases: [number[], string][] = [
      [[0x80, 2, ...ascii('ios\nsystem\n'), 0x2e], 'INST (0x69)'],
      [[0x80, 2, 0x28, 0x6f, 0x2e], 'OBJ (0x6f)'],
      [[0x80, 2, 0x29, 0x29, 0x81, 0x2e], 'NEWOBJ (0x81)'],
      [[0x80, 2, 0x82, 1, 0x2e], 'EXT1 (0x82)'],
      [[0x80, 2, ...ascii("S'x'\n"), 0x2e], 'STRING (0x53)'],
      [[0x80, 2, 0xff], 'unknown (0xff)'],
    ];
    for (const [bytes, name] of cases) assert.throws(() => read(bytes), refused('PICKLE_OPCODE_REFUSED', name), name);
  });

  it('refuses a truncated pickle, a malformed stack and a newer protocol', () => {
    assert.throws(() => read([0x80, 2, 0x58, 10, 0, 0, 0, 0x61]), refused('PICKLE_TRUNCATED'));
    assert.throws(() => read([0x80, 2, 0x4e]), refused('PICKLE_TRUNCATED'));
    assert.throws(() => read([0x80, 2, 0x7d, 0x75, 0x2e]), refused('PICKLE_MALFORMED', 'no MARK'));
    assert.throws(() => read([0x80, 2, 0x2e]), refused('PICKLE_MALFORMED', 'underflow'));
    assert.throws(() => read([0x80, 2, 0x68, 3, 0x2e]), refused('PICKLE_MALFORMED', 'memo slot 3'));
    const storageCall = [0x80, 2, ...ascii('ctorch\nFloatStorage\n'), 0x29, 0x52, 0x2e];
    assert.throws(() => read(storageCall), refused('PICKLE_MALFORMED', 'not callable'));
    assert.throws(() => read([0x80, 6, 0x4e, 0x2e]), refused('PICKLE_PROTOCOL_UNSUPPORTED'));
    assert.throws(() => read([0x80, 2, 0x4e, 0x51, 0x2e]), refused('PICKLE_PERSISTENT_ID_REFUSED'));
  });

  it('hands persistent ids to the resolver', () => {
    const bytes = [0x80, 2, 0x58, 1, 0, 0, 0, ...ascii('k'), 0x85, 0x51, 0x2e];
    assert.equal(
      read(bytes, undefined, (pid) => `loaded ${(pid as string[])[0]}`),
      'loaded k',
    );
  });
});
