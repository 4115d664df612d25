// English number words (US style, no "and"): cardinals, ordinals, decimals, years and digit-by-digit reading.
// Inputs are digit strings (no sign, no grouping commas) so that arbitrarily long numbers never pass through a float.

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES = ['', 'thousand', 'million', 'billion', 'trillion'];
/** Longer integers are read digit by digit (phone numbers, ids). */
const MAX_CARDINAL_DIGITS = 15;

const IRREGULAR_ORDINALS: Record<string, string> = {
  one: 'first',
  two: 'second',
  three: 'third',
  five: 'fifth',
  eight: 'eighth',
  nine: 'ninth',
  twelve: 'twelfth',
};

function belowHundred(value: number): string {
  if (value < 20) return ONES[value]!;
  const tens = TENS[Math.floor(value / 10)]!;
  return value % 10 === 0 ? tens : `${tens}-${ONES[value % 10]}`;
}

function belowThousand(value: number): string {
  const hundreds = Math.floor(value / 100);
  const rest = value % 100;
  const words: string[] = [];
  if (hundreds > 0) words.push(`${ONES[hundreds]} hundred`);
  if (rest > 0) words.push(belowHundred(rest));
  return words.join(' ');
}

function digitsByDigit(digits: string): string {
  return Array.from(digits, (digit) => ONES[Number(digit)]).join(' ');
}

/** Words of a non-negative integer given as digits; leading zeros and very long numbers are read digit by digit. */
export function cardinalWords(digits: string): string {
  if ((digits.length > 1 && digits.startsWith('0')) || digits.length > MAX_CARDINAL_DIGITS) {
    return digitsByDigit(digits);
  }
  if (/^0+$/.test(digits)) return 'zero';
  const groups: number[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.unshift(Number(digits.slice(Math.max(0, end - 3), end)));
  const words: string[] = [];
  groups.forEach((group, index) => {
    if (group === 0) return;
    const scale = SCALES[groups.length - 1 - index]!;
    words.push(scale === '' ? belowThousand(group) : `${belowThousand(group)} ${scale}`);
  });
  return words.join(' ');
}

/** Cardinal words turned ordinal on their last word: twenty-one → twenty-first. */
export function ordinalWords(digits: string): string {
  const cardinal = cardinalWords(String(Number(digits)));
  const match = /([a-z]+)$/.exec(cardinal)!;
  const last = match[1]!;
  const ordinal = IRREGULAR_ORDINALS[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return cardinal.slice(0, match.index) + ordinal;
}

/** A decimal number: integer part as a cardinal, fraction digit by digit ("three point one four"). */
export function decimalWords(integer: string, fraction: string | undefined): string {
  const whole = cardinalWords(integer === '' ? '0' : integer);
  return fraction === undefined || fraction === '' ? whole : `${whole} point ${digitsByDigit(fraction)}`;
}

/** A four-digit year as spoken: 1999 nineteen ninety-nine, 1905 nineteen oh five, 2000 two thousand, 2024 twenty twenty-four. */
export function yearWords(digits: string): string {
  const value = Number(digits);
  if (digits.length !== 4 || value < 1000) return cardinalWords(digits);
  const high = Math.floor(value / 100);
  const low = value % 100;
  if (value % 1000 < 10 && value % 1000 !== 0 && high % 10 === 0) return cardinalWords(digits);
  if (value % 1000 === 0) return cardinalWords(digits);
  if (low === 0) return `${belowHundred(high)} hundred`;
  return low < 10 ? `${belowHundred(high)} oh ${ONES[low]}` : `${belowHundred(high)} ${belowHundred(low)}`;
}

/** Plural of a decade's words: nineteen ninety → nineteen nineties. */
export function decadeWords(digits: string): string {
  const words = digits.length === 4 ? yearWords(digits) : cardinalWords(digits);
  return words.endsWith('y') ? `${words.slice(0, -1)}ies` : `${words}s`;
}
