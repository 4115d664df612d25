// JSON.parse keeps the last of two equal keys without a word, so a header or index naming one tensor twice would
// silently lose one of them. This walks already-valid JSON text and reports the first key an object repeats.

interface Level {
  readonly keys: Set<string> | undefined;
  readonly path: string;
  expectKey: boolean;
  lastKey: string;
}

/** The dotted path of the first repeated key (e.g. `weight_map.a`), or undefined. `text` must be valid JSON. */
export function firstDuplicateKey(text: string): string | undefined {
  const levels: Level[] = [];
  const childPath = (): string => {
    const parent = levels[levels.length - 1];
    if (parent === undefined) return '';
    if (parent.keys === undefined) return parent.path;
    return parent.path === '' ? parent.lastKey : `${parent.path}.${parent.lastKey}`;
  };
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (character === '"') {
      const start = index;
      for (index++; text[index] !== '"'; index++) if (text[index] === '\\') index++;
      const level = levels[levels.length - 1];
      if (level?.keys !== undefined && level.expectKey) {
        const key = JSON.parse(text.slice(start, index + 1)) as string;
        if (level.keys.has(key)) return level.path === '' ? key : `${level.path}.${key}`;
        level.keys.add(key);
        level.lastKey = key;
        level.expectKey = false;
      }
    } else if (character === '{' || character === '[') {
      const path = childPath();
      levels.push({ keys: character === '{' ? new Set() : undefined, path, expectKey: true, lastKey: '' });
    } else if (character === '}' || character === ']') levels.pop();
    else if (character === ',') {
      const level = levels[levels.length - 1];
      if (level !== undefined) level.expectKey = true;
    }
  }
  return undefined;
}
