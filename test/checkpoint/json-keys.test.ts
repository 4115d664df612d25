// The repeated-key walk (src/checkpoint/json-keys.ts): keys compared by their decoded text (escapes included), one
// set of keys per object, and strings that only look like keys (values, array items) never counted. Given the parsed
// value, the first pass that skips the walk must never skip it when a key repeats.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { firstDuplicateKey } from '../../src/checkpoint/json-keys.ts';

test('a repeated key is named by its dotted path, its escapes decoded; values and other objects do not count', () => {
  const cases: [string, string | undefined][] = [
    ['{"a":1,"b":{"c":[1,{"d":2,"d":3}]}}', 'b.c.d'],
    ['{"a\\"b":1,"a\\"b":2}', 'a"b'],
    ['{"u\\u0041":1,"uA":2}', 'uA'],
    ['{"x":"\\\\","x":1}', 'x'],
    ['{"x":"a\\\\\\"b","y":{"x":1},"z":[{"q":1},{"q":2}]}', undefined],
    ['{"k":"v,\\"k\\":1","k2":1}', undefined],
    ['{"weight_map":{"a":"s1","b":"s2","a":"s3"}}', 'weight_map.a'],
    ['[{"a":1},{"a":1}]', undefined],
  ];
  for (const [text, repeated] of cases) assert.equal(firstDuplicateKey(text), repeated, text);
});

/** Asserts the answer is `repeated`, by the walk alone and given the parsed value. */
function assertSameWithParsed(text: string, repeated: string | undefined): void {
  assert.equal(firstDuplicateKey(text), repeated, `walk alone: ${text}`);
  assert.equal(firstDuplicateKey(text, JSON.parse(text)), repeated, `with parsed: ${text}`);
}

/** `count` distinct members `"k<from>":<i>`, enough past the first 16 keys to be counted rather than compared. */
const many = (from: number, count: number) => Array.from({ length: count }, (_, i) => `"k${from + i}":${i}`);
const large = (...extra: string[]) => `{${[...many(100, 20), ...extra].join(',')}}`;

test('given the parsed value, large objects are counted against it and the same repeat is named', () => {
  const cases: [string, string | undefined][] = [
    [`{${many(0, 40).join(',')}}`, undefined],
    [`{${[...many(0, 40), '"k3":1'].join(',')}}`, 'k3'],
    [`{"weight_map":{${[...many(0, 30), '"k\\u0030":2'].join(',')}}}`, 'weight_map.k0'],
    [`[{"a":1},{${many(0, 20).join(',')},"a":{"b":1,"b":2}}]`, 'a.b'],
    [`{"x":{${[...many(0, 20), '"k1":0'].join(',')}},"x":{${many(0, 20).join(',')}}}`, 'x.k1'],
    [`{"x":[{${[...many(0, 20), '"k1":0'].join(',')}}],"x":5}`, 'x.k1'],
  ];
  for (const [text, repeated] of cases) assertSameWithParsed(text, repeated);
});

test('escapes, look-alike strings and nesting cannot hide a repeat from the first pass', () => {
  const cases: [string, string | undefined][] = [
    // Unicode escapes spelling a key already given, in a small object and past the compared keys of a large one.
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{"\\u0061":1,"a":2}', 'a'],
    [large('"a":1', '"\\u0061":2'), 'a'],
    [large('"\\ud83d\\ude00":1', '"😀":2'), '😀'],
    // An escaped quote in the key; the same text unescaped differs.
    [large('"a\\"b":1', '"a\\"b":2'), 'a"b'],
    [large('"a\\"b":1', '"a\\\\b":2'), undefined],
    // Strings holding braces, brackets, commas, colons and quotes, as values and as keys.
    [large('"s":"{\\"k100\\":1,[}"', '"{":"}"', '"}":"{"', '"[,:]":1', '"{":0'), '{'],
    [large('"s":"{\\"k100\\":1,[}"', '"{":"}"', '"}":"{"', '"[,:]":1'), undefined],
    // A repeat inside an object inside arrays inside a large object, and inside the twentieth item of an array.
    [large('"deep":[[1,{"z":[{"q":1,"q":2}]}]]'), 'deep.z.q'],
    [`[${[...Array.from({ length: 19 }, () => large()), large('"k119":0')].join(',')}]`, 'k119'],
    // __proto__ is an own key of a parsed object like any other.
    [large('"__proto__":{}', '"__proto__":1'), '__proto__'],
    ['{"__proto__":1,"__proto__":2}', '__proto__'],
    // Siblings as large as the object that repeats a key: the count must be of that object, not its neighbour.
    [`{"x":${large('"extra":0')},"y":${large('"k100":0')}}`, 'y.k100'],
    [`[${large('"extra":0')},${large('"k100":0')}]`, 'k100'],
    // A repeat in an enclosing object leads the count to the other value, an object as large as the first.
    [`{"x":${large('"k100":0')},"y":1,"x":${large('"extra":0')}}`, 'x.k100'],
    [`${large(`"x":${large('"k100":0')}`, `"\\u0078":${large('"extra":0')}`)}`, 'x.k100'],
  ];
  for (const [text, repeated] of cases) assertSameWithParsed(text, repeated);
});

/** JSON texts whose objects often repeat a key, spelled plainly or escaped, among few or many keys. */
const keys = fc.constantFrom(
  'a',
  'b',
  'k0',
  'k19',
  '\\u0061',
  'a\\"',
  '\\"',
  '{',
  '}',
  ',',
  '\\\\',
  '[',
  '😀',
  '\\ud83d\\ude00',
);
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('1', 'null', '"{\\"a\\":[,]}"', '"}"'),
    fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    fc
      .record({
        members: fc.array(fc.tuple(keys, tie('value')), { maxLength: 3 }),
        padding: fc.constantFrom(0, 20),
        at: fc.nat(),
      })
      .map(({ members, padding, at }) => {
        const texts = members.map(([key, value]) => `"${key}":${value}`);
        texts.splice(at % (texts.length + 1), 0, ...many(0, padding));
        return `{${texts.join(',')}}`;
      }),
  ),
})).value;

test('for any JSON text, the parsed value never changes which repeat is named', () => {
  fc.assert(
    fc.property(jsonText, (value) => {
      // An object at the top, as a header or an index has.
      const text = `{"v":${value}}`;
      assertSameWithParsed(text, firstDuplicateKey(text));
    }),
    { seed: 20260412, numRuns: 3000 },
  );
});

/** Trees whose objects all have 23 keys (two members, 20 filler keys, then `"x":0`), so siblings match in size. */
const sameSizeTree: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant('1'),
    fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .tuple(tie('node'), tie('node'))
      .map(([first, second]) => `{${[`"m0":${first}`, `"m1":${second}`, ...many(0, 20), '"x":0'].join(',')}}`),
  ),
})).node;

test('a repeat past the compared keys of one object among same-sized ones is always found', () => {
  fc.assert(
    fc.property(sameSizeTree, fc.nat(), fc.constantFrom('"k5"', '"k\\u0035"'), (tree, pick, repeat) => {
      const text = `{"v":${tree}}`;
      const objects = text.split('"x":0').length - 1;
      fc.pre(objects > 0);
      // The picked object's last key becomes one of its filler keys again: one count short, its neighbours not.
      let seen = -1;
      const repeated = text.replaceAll('"x":0', (marker) => (++seen === pick % objects ? `${repeat}:0` : marker));
      assert.notEqual(firstDuplicateKey(repeated), undefined);
      assertSameWithParsed(repeated, firstDuplicateKey(repeated));
    }),
    { seed: 20260412, numRuns: 1000 },
  );
});
