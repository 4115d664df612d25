// The repeated-key walk (src/checkpoint/json-keys.ts): keys compared by their decoded text (escapes included), one
// set of keys per object, and strings that only look like keys (values, array items) never counted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
