// English text normalisation for speech: numbers, ordinals, money, percentages, dates, times, temperatures and common
// units become words. Directions (`[sighs]`), markup tags (`<whisper>`) and tokens (`<|speaker:1|>`) pass untouched.
// Rules run in order on the unprotected spans; each rule consumes its digits so later rules never see them again.
import { cardinalWords, decadeWords, decimalWords, ordinalWords, yearWords } from './numberWords.ts';

/** Spans kept exactly as written: `[directions]`, `<|tokens|>` and `<markup>` tags (also never cut by the splitter). */
export const PROTECTED_SPANS = /\[[^\]\n]*\]|<\|[^|\n]*\|>|<\/?[A-Za-z][^<>\n]*>/g;

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const MONTH_NAME = `(${MONTHS.join('|')}|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\\.?`;

/** Abbreviation → [singular, plural]; matched case-sensitively, right after a number. */
const UNITS: Record<string, [string, string]> = {
  km: ['kilometer', 'kilometers'],
  m: ['meter', 'meters'],
  cm: ['centimeter', 'centimeters'],
  mm: ['millimeter', 'millimeters'],
  kg: ['kilogram', 'kilograms'],
  g: ['gram', 'grams'],
  mg: ['milligram', 'milligrams'],
  lb: ['pound', 'pounds'],
  lbs: ['pound', 'pounds'],
  oz: ['ounce', 'ounces'],
  mi: ['mile', 'miles'],
  ft: ['foot', 'feet'],
  mph: ['mile per hour', 'miles per hour'],
  'km/h': ['kilometer per hour', 'kilometers per hour'],
  kph: ['kilometer per hour', 'kilometers per hour'],
  ml: ['milliliter', 'milliliters'],
  mL: ['milliliter', 'milliliters'],
  L: ['liter', 'liters'],
  KB: ['kilobyte', 'kilobytes'],
  MB: ['megabyte', 'megabytes'],
  GB: ['gigabyte', 'gigabytes'],
  TB: ['terabyte', 'terabytes'],
  Hz: ['hertz', 'hertz'],
  kHz: ['kilohertz', 'kilohertz'],
  MHz: ['megahertz', 'megahertz'],
  GHz: ['gigahertz', 'gigahertz'],
  W: ['watt', 'watts'],
  kW: ['kilowatt', 'kilowatts'],
  kWh: ['kilowatt hour', 'kilowatt hours'],
  V: ['volt', 'volts'],
  ms: ['millisecond', 'milliseconds'],
  sec: ['second', 'seconds'],
  min: ['minute', 'minutes'],
  hr: ['hour', 'hours'],
  hrs: ['hour', 'hours'],
};
const UNIT_NAMES = Object.keys(UNITS)
  .sort((a, b) => b.length - a.length)
  .map((unit) => unit.replace('/', '\\/'))
  .join('|');

/** Symbol → [major singular, major plural, minor singular, minor plural]. */
const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '¥': ['yen', 'yen', '', ''],
};

// A number: comma-grouped or plain digits, optional decimal part. Captures: integer (may hold commas), fraction.
const NUMBER = '(\\d{1,3}(?:,\\d{3})+|\\d+)(?:\\.(\\d+))?';
const NOT_AFTER_WORD = '(?<![\\p{L}\\p{N}])';
const NOT_BEFORE_WORD = '(?![\\p{L}\\p{N}])';

function integerDigits(grouped: string): string {
  return grouped.replaceAll(',', '');
}

function numberWords(grouped: string, fraction: string | undefined): string {
  return decimalWords(integerDigits(grouped), fraction);
}

function isOne(grouped: string, fraction: string | undefined): boolean {
  return grouped === '1' && fraction === undefined;
}

function dateWords(month: number, day: number, year: string | undefined): string | undefined {
  if (month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  const spoken = `${MONTHS[month - 1]} ${ordinalWords(String(day))}`;
  return year === undefined ? spoken : `${spoken}, ${yearWords(year)}`;
}

function monthIndex(name: string): number {
  return MONTHS.findIndex((month) => month.slice(0, 3) === name.slice(0, 3)) + 1;
}

function timeWords(hours: string, minutes: string, meridiem: string | undefined): string | undefined {
  const hour = Number(hours);
  const minute = Number(minutes);
  if (hour > 24 || minute > 59) return undefined;
  const suffix = meridiem === undefined ? '' : ` ${meridiem.replaceAll('.', '').toUpperCase()}`;
  const hourWords = cardinalWords(String(hour));
  if (minute === 0) return meridiem === undefined ? `${hourWords} o'clock` : `${hourWords}${suffix}`;
  const minuteWords = minute < 10 ? `oh ${cardinalWords(String(minute))}` : cardinalWords(String(minute));
  return `${hourWords} ${minuteWords}${suffix}`;
}

function moneyWords(symbol: string, grouped: string, fraction: string | undefined, scale: string | undefined): string {
  const [one, many, minorOne, minorMany] = CURRENCIES[symbol]!;
  if (scale !== undefined) return `${numberWords(grouped, fraction)} ${scale.toLowerCase()} ${many}`;
  const major = integerDigits(grouped);
  const cents = fraction !== undefined && fraction.length === 2 && minorMany !== '' ? Number(fraction) : undefined;
  if (cents === undefined) {
    const unit = isOne(grouped, fraction) ? one : many;
    return `${numberWords(grouped, fraction)} ${unit}`;
  }
  const minor = `${cardinalWords(String(cents))} ${cents === 1 ? minorOne : minorMany}`;
  if (Number(major) === 0) return minor;
  const majorPart = `${cardinalWords(major)} ${major === '1' ? one : many}`;
  return cents === 0 ? majorPart : `${majorPart} and ${minor}`;
}

const FRACTION_DENOMINATORS: Record<string, [string, string]> = {
  '2': ['half', 'halves'],
  '3': ['third', 'thirds'],
  '4': ['quarter', 'quarters'],
  '5': ['fifth', 'fifths'],
  '6': ['sixth', 'sixths'],
  '7': ['seventh', 'sevenths'],
  '8': ['eighth', 'eighths'],
  '9': ['ninth', 'ninths'],
  '10': ['tenth', 'tenths'],
};

function fractionWords(numerator: string, denominator: string): string | undefined {
  const names = FRACTION_DENOMINATORS[denominator];
  if (names === undefined || Number(numerator) >= Number(denominator) || Number(numerator) === 0) return undefined;
  return `${cardinalWords(numerator)} ${numerator === '1' ? names[0] : names[1]}`;
}

type Rule = [RegExp, (...groups: string[]) => string | undefined];

const RULES: Rule[] = [
  // 2024-03-05
  [
    new RegExp(`${NOT_AFTER_WORD}(\\d{4})-(\\d{2})-(\\d{2})${NOT_BEFORE_WORD}`, 'gu'),
    (_, year, month, day) => dateWords(Number(month), Number(day), year),
  ],
  // 03/05/2024 (month first)
  [
    new RegExp(`${NOT_AFTER_WORD}(\\d{1,2})/(\\d{1,2})/(\\d{4})${NOT_BEFORE_WORD}`, 'gu'),
    (_, month, day, year) => dateWords(Number(month), Number(day), year),
  ],
  // March 5, 2024 / Mar. 5th / March 5
  [
    new RegExp(`\\b${MONTH_NAME} (\\d{1,2})(?:st|nd|rd|th)?(?:,? (\\d{4}))?${NOT_BEFORE_WORD}`, 'gu'),
    (_, month, day, year) => dateWords(monthIndex(month!), Number(day), year || undefined),
  ],
  // 3:30, 3:30 PM, 11:05 a.m.
  [
    new RegExp(`${NOT_AFTER_WORD}(\\d{1,2}):(\\d{2})(?!:?\\d)(?:\\s?([AaPp]\\.?[Mm]\\.?)(?![\\p{L}]))?`, 'gu'),
    (_, hours, minutes, meridiem) => timeWords(hours!, minutes!, meridiem || undefined),
  ],
  // $1,234.56, €20, $2.5 million
  [
    new RegExp(`([$€£¥])${NUMBER}(?:\\s(thousand|million|billion|trillion))?${NOT_BEFORE_WORD}`, 'gu'),
    (_, symbol, grouped, fraction, scale) => moneyWords(symbol!, grouped!, fraction || undefined, scale || undefined),
  ],
  // 45%, -2.5 %
  [
    new RegExp(`${NOT_AFTER_WORD}(-)?${NUMBER}\\s?%`, 'gu'),
    (_, minus, grouped, fraction) => `${minus ? 'minus ' : ''}${numberWords(grouped!, fraction || undefined)} percent`,
  ],
  // 20°C, -5 °F
  [
    new RegExp(`${NOT_AFTER_WORD}(-)?${NUMBER}\\s?°\\s?([CF])${NOT_BEFORE_WORD}`, 'gu'),
    (_, minus, grouped, fraction, scale) => {
      const degrees = isOne(grouped!, fraction || undefined) && !minus ? 'degree' : 'degrees';
      const words = numberWords(grouped!, fraction || undefined);
      return `${minus ? 'minus ' : ''}${words} ${degrees} ${scale === 'C' ? 'Celsius' : 'Fahrenheit'}`;
    },
  ],
  // 1/2, 3/4 (proper fractions with a common denominator)
  [
    new RegExp(`${NOT_AFTER_WORD}(\\d)/(\\d{1,2})${NOT_BEFORE_WORD}(?!/)`, 'gu'),
    (_, numerator, denominator) => fractionWords(numerator!, denominator!),
  ],
  // 21st, 2nd, 100th
  [new RegExp(`${NOT_AFTER_WORD}(\\d+)(st|nd|rd|th)${NOT_BEFORE_WORD}`, 'gu'), (_, digits) => ordinalWords(digits!)],
  // 5 km, 3.5GB, 1 ft
  [
    new RegExp(`${NOT_AFTER_WORD}${NUMBER}\\s?(${UNIT_NAMES})${NOT_BEFORE_WORD}`, 'gu'),
    (_, grouped, fraction, unit) => {
      const [one, many] = UNITS[unit!]!;
      return `${numberWords(grouped!, fraction || undefined)} ${isOne(grouped!, fraction || undefined) ? one : many}`;
    },
  ],
  // the 1990s, the 80s
  [new RegExp(`${NOT_AFTER_WORD}(\\d{4}|\\d0)s${NOT_BEFORE_WORD}`, 'gu'), (_, digits) => decadeWords(digits!)],
  // in 1999, since 2010: a bare year after a word that announces one
  [
    /\b(in|since|by|from|until|till|of|year|circa|during|before|after) (\d{4})(?![\p{L}\p{N},.]\d|[\p{L}\p{N}])/giu,
    (_, word, digits) => `${word} ${yearWords(digits!)}`,
  ],
  // -5 (a sign only where it cannot be a hyphen or a range)
  [
    new RegExp(`(?<![\\p{L}\\p{N}-])-${NUMBER}${NOT_BEFORE_WORD}`, 'gu'),
    (_, grouped, fraction) => `minus ${numberWords(grouped!, fraction || undefined)}`,
  ],
  // any other number; digits glued to letters get a space (mp3 → mp three)
  [new RegExp(NUMBER, 'gu'), (_, grouped, fraction) => numberWords(grouped!, fraction || undefined)],
];

function padAgainstLetters(text: string, offset: number, match: string, words: string): string {
  const before = offset > 0 && /[\p{L}]/u.test(text[offset - 1]!) ? ' ' : '';
  const after = /[\p{L}]/u.test(text[offset + match.length] ?? '') ? ' ' : '';
  return `${before}${words}${after}`;
}

function normalizeSpan(span: string): string {
  let text = span;
  for (const [pattern, spell] of RULES) {
    text = text.replace(pattern, (match: string, ...rest: unknown[]) => {
      const offset = rest.at(-2) as number;
      const source = rest.at(-1) as string;
      const groups = rest.slice(0, -2).map((group) => (group === undefined ? '' : String(group)));
      const words = spell(match, ...groups);
      return words === undefined ? match : padAgainstLetters(source, offset, match, words);
    });
  }
  return text;
}

/** English normalisation of `text`; protected spans (directions, tags, tokens) are kept exactly. */
export function normalizeText(text: string): string {
  let result = '';
  let last = 0;
  for (const match of text.matchAll(PROTECTED_SPANS)) {
    result += normalizeSpan(text.slice(last, match.index)) + match[0];
    last = match.index + match[0].length;
  }
  return result + normalizeSpan(text.slice(last));
}
