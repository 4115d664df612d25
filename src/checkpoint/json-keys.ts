// JSON.parse keeps the last of two equal keys without a word, so a header or index naming one tensor twice would
// silently lose one of them. This walks already-valid JSON text and reports the first key an object repeats.

interface Level {
  readonly keys: Set<string> | undefined;
  readonly path: string;
  expectKey: boolean;
  lastKey: string;
}

const QUOTE = '"'.charCodeAt(0);
const BACKSLASH = '\\'.charCodeAt(0);
const OPEN_OBJECT = '{'.charCodeAt(0);
const OPEN_ARRAY = '['.charCodeAt(0);
const CLOSE_OBJECT = '}'.charCodeAt(0);
const CLOSE_ARRAY = ']'.charCodeAt(0);
const COMMA = ','.charCodeAt(0);

/** The dotted path of the first repeated key (e.g. `weight_map.a`), or undefined. `text` must be valid JSON. */
export function firstDuplicateKey(text: string): string | undefined {
  const levels: Level[] = [];
  const childPath = (): string => {
    const parent = levels[levels.length - 1];
    if (parent === undefined) return '';
    if (parent.keys === undefined) return parent.path;
    return parent.path === '' ? parent.lastKey : `${parent.path}.${parent.lastKey}`;
  };
  // Character codes, and a key's text taken as it stands unless it holds an escape: the walk runs over every shard
  // header and the index at load (62259 names in the full checkpoint).
  const length = text.length;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      const start = index;
      let escaped = false;
      for (index++; text.charCodeAt(index) !== QUOTE; index++) {
        if (text.charCodeAt(index) === BACKSLASH) {
          index++;
          escaped = true;
        }
      }
      const level = levels[levels.length - 1];
      if (level?.keys !== undefined && level.expectKey) {
        const key = escaped ? (JSON.parse(text.slice(start, index + 1)) as string) : text.slice(start + 1, index);
        if (level.keys.has(key)) return level.path === '' ? key : `${level.path}.${key}`;
        level.keys.add(key);
        level.lastKey = key;
        level.expectKey = false;
      }
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      const path = childPath();
      levels.push({ keys: code === OPEN_OBJECT ? new Set() : undefined, path, expectKey: true, lastKey: '' });
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) levels.pop();
    else if (code === COMMA) {
      const level = levels[levels.length - 1];
      if (level !== undefined) level.expectKey = true;
    }
  }
  return undefined;
}
