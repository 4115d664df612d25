// JSON.parse keeps the last of two equal keys without a word, so a header or index naming one tensor twice would
// silently lose one of them. This walks already-valid JSON text and reports the first key an object repeats. Given
// the parsed value too, a cheaper first pass skips that walk when no object can repeat a key: a small object's keys
// are compared as written, a large object's are counted against the keys the parse kept for it.

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

/**
 * The dotted path of the first repeated key (e.g. `weight_map.a`), or undefined. `text` must be valid JSON; `parsed`,
 * when given, is JSON.parse(text): the answer is the same, found sooner when no key repeats.
 */
export function firstDuplicateKey(text: string, parsed?: unknown): string | undefined {
  if (parsed !== undefined && !mayRepeatKey(text, parsed)) return undefined;
  return keyedWalk(text);
}

/** Keys an object is checked against one by one; past this many its keys are counted instead. */
const LISTED_KEYS = 16;

/** One open object or array of the counting walk, kept by depth and reused. */
interface CountedLevel {
  isObject: boolean;
  expectKey: boolean;
  /** An object's keys so far; an array's item now open (its commas so far). */
  count: number;
  /** The current key's text between its quotes, and whether it holds an escape. */
  keyStart: number;
  keyEnd: number;
  keyEscaped: boolean;
  /** Where an object's first keys (up to LISTED_KEYS, `count` of them) lie in the text: start, end, start, end…; the
   *  array is kept from object to object and only its first 2 × count places are read. */
  readonly listed: number[];
}

/** Whether the text from `start` to `end` equals one of the first `count` listed keys' text. */
function isListed(text: string, listed: readonly number[], count: number, start: number, end: number): boolean {
  for (let at = 0; at < 2 * count; at += 2) {
    const listedStart = listed[at]!;
    if (listed[at + 1]! - listedStart === end - start && sameText(text, listedStart, start, end - start)) return true;
  }
  return false;
}

function sameText(text: string, first: number, second: number, length: number): boolean {
  for (let offset = 0; offset < length; offset++) {
    if (text.charCodeAt(first + offset) !== text.charCodeAt(second + offset)) return false;
  }
  return true;
}

function keyText(text: string, start: number, end: number, escaped: boolean): string {
  return escaped ? (JSON.parse(text.slice(start - 1, end + 1)) as string) : text.slice(start, end);
}

/** How many keys the parse kept in the object that the innermost of `depth` open levels is; undefined when the path
 *  leads elsewhere (an enclosing object repeats a key and the parse kept its other value). */
function keptKeys(text: string, parsed: unknown, levels: readonly CountedLevel[], depth: number): number | undefined {
  let node = parsed;
  for (let index = 0; index < depth - 1; index++) {
    if (typeof node !== 'object' || node === null) return undefined;
    const level = levels[index]!;
    const step = level.isObject ? keyText(text, level.keyStart, level.keyEnd, level.keyEscaped) : level.count;
    node = (node as Record<string | number, unknown>)[step];
  }
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
  return Object.keys(node).length;
}

/**
 * False only when no object of `text` repeats a key. A small object's keys are compared as written (keys without an
 * escape are equal only when written alike; an escaped one is taken as a repeat); a large object's count is compared
 * with the keys the parse kept for it, fewer kept meaning one repeated. Only below an object that repeats a key can
 * the path lead the count to another object, so the outermost object that repeats one is always caught.
 */
function mayRepeatKey(text: string, parsed: unknown): boolean {
  const levels: CountedLevel[] = [];
  let depth = 0;
  const length = text.length;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      const start = index + 1;
      let escaped = false;
      for (index++; text.charCodeAt(index) !== QUOTE; index++) {
        if (text.charCodeAt(index) === BACKSLASH) {
          index++;
          escaped = true;
        }
      }
      const level = depth > 0 ? levels[depth - 1]! : undefined;
      if (level === undefined || !level.isObject || !level.expectKey) continue;
      level.expectKey = false;
      level.keyStart = start;
      level.keyEnd = index;
      level.keyEscaped = escaped;
      const listedBefore = level.count++;
      if (listedBefore >= LISTED_KEYS) continue;
      // An escaped key is left to the keyed walk, which decodes it.
      if (escaped || isListed(text, level.listed, listedBefore, start, index)) return true;
      level.listed[2 * listedBefore] = start;
      level.listed[2 * listedBefore + 1] = index;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      openLevel(levels, depth, code === OPEN_OBJECT);
      depth++;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      const level = levels[depth - 1]!;
      if (level.isObject && level.count > LISTED_KEYS && keptKeys(text, parsed, levels, depth) !== level.count) {
        return true;
      }
      depth--;
    } else if (code === COMMA && depth > 0) {
      const level = levels[depth - 1]!;
      if (level.isObject) level.expectKey = true;
      else level.count++;
    }
  }
  return false;
}

/** Starts the level at `depth` afresh, reusing the one an earlier object or array left there. */
function openLevel(levels: CountedLevel[], depth: number, isObject: boolean): void {
  const level = levels[depth];
  if (level === undefined) {
    levels[depth] = { isObject, expectKey: true, count: 0, keyStart: 0, keyEnd: 0, keyEscaped: false, listed: [] };
    return;
  }
  level.isObject = isObject;
  level.expectKey = true;
  level.count = 0;
}

/** The keyed walk: every object's keys in a Set, so the first repeat is found where it stands. */
function keyedWalk(text: string): string | undefined {
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
