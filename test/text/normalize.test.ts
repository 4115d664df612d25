// English normalisation table: each input with the words a careful reader would say, written out by hand.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeText } from '../../src/text/normalize.ts';

const TABLE: [string, string][] = [
  // cardinals and decimals
  ['I have 3 apples.', 'I have three apples.'],
  ['0', 'zero'],
  ['13', 'thirteen'],
  ['40', 'forty'],
  ['99', 'ninety-nine'],
  ['100', 'one hundred'],
  ['123', 'one hundred twenty-three'],
  ['1,001', 'one thousand one'],
  ['1000000', 'one million'],
  ['2,000,000,000', 'two billion'],
  ['1,234,567', 'one million two hundred thirty-four thousand five hundred sixty-seven'],
  ['3.14159', 'three point one four one five nine'],
  ['-5 below', 'minus five below'],
  ['007', 'zero zero seven'],
  [
    '1234567890123456789',
    'one two three four five six seven eight nine zero one two three four five six seven eight nine',
  ],
  ['1,2,3', 'one,two,three'],
  ['mp3 and 4K', 'mp three and four K'],
  ['5 mangoes', 'five mangoes'],
  // fractions
  ['1/2 cup', 'one half cup'],
  ['3/4 of them', 'three quarters of them'],
  ['2/7', 'two sevenths'],
  ['open 24/7', 'open twenty-four/seven'],
  // ordinals
  ['1st 2nd 3rd 4th', 'first second third fourth'],
  ['11th 12th 13th', 'eleventh twelfth thirteenth'],
  ['20th 21st 22nd 99th', 'twentieth twenty-first twenty-second ninety-ninth'],
  ['100th 101st 1000th', 'one hundredth one hundred first one thousandth'],
  // money
  ['$1', 'one dollar'],
  ['$5', 'five dollars'],
  ['It costs $1,234.56 today.', 'It costs one thousand two hundred thirty-four dollars and fifty-six cents today.'],
  ['$0.99', 'ninety-nine cents'],
  ['$1.01', 'one dollar and one cent'],
  ['$2.5 million', 'two point five million dollars'],
  ['€20', 'twenty euros'],
  ['£3.99', 'three pounds and ninety-nine pence'],
  ['¥500', 'five hundred yen'],
  // percentages
  ['50% off', 'fifty percent off'],
  ['3.5 %', 'three point five percent'],
  ['-2%', 'minus two percent'],
  // dates and years
  ['On 2024-03-05 we met', 'On March fifth, twenty twenty-four we met'],
  ['12/25/1999', 'December twenty-fifth, nineteen ninety-nine'],
  ['March 5, 2024', 'March fifth, twenty twenty-four'],
  ['Jan. 1st', 'January first'],
  ['July 4 2000', 'July fourth, two thousand'],
  ['in 1999', 'in nineteen ninety-nine'],
  ['since 2010', 'since twenty ten'],
  ['in 1905', 'in nineteen oh five'],
  ['by 2000', 'by two thousand'],
  ['in 2005', 'in two thousand five'],
  ['the 1990s', 'the nineteen nineties'],
  ['the 80s', 'the eighties'],
  ['1999 people', 'one thousand nine hundred ninety-nine people'],
  // times
  ['at 3:30', 'at three thirty'],
  ['at 3:05', 'at three oh five'],
  ['12:00', "twelve o'clock"],
  ['3:00 PM', 'three PM'],
  ['11:45 a.m. sharp', 'eleven forty-five AM sharp'],
  ['14:45', 'fourteen forty-five'],
  // units and temperatures
  ['5 km', 'five kilometers'],
  ['1 kg', 'one kilogram'],
  ['3.5GB', 'three point five gigabytes'],
  ['10 mph', 'ten miles per hour'],
  ['1 ft or 6 ft', 'one foot or six feet'],
  ['100 km/h', 'one hundred kilometers per hour'],
  ['250 ml', 'two hundred fifty milliliters'],
  ['1 min and 30 sec', 'one minute and thirty seconds'],
  ['20°C', 'twenty degrees Celsius'],
  ['-5 °F', 'minus five degrees Fahrenheit'],
  // directions, tags and tokens stay as they are
  ['[sighs] I have 2 dogs', '[sighs] I have two dogs'],
  ['[laughs 2 times] 2', '[laughs 2 times] two'],
  ['<whisper>3 cats</whisper>', '<whisper>three cats</whisper>'],
  ['<|speaker:1|>ok 4', '<|speaker:1|>ok four'],
  ['<emphasis level="2">now</emphasis>', '<emphasis level="2">now</emphasis>'],
  // text without anything to normalise
  ['Hello, world!', 'Hello, world!'],
  ['你好，世界！', '你好，世界！'],
];

test('the table has at least 40 cases', () => {
  assert.ok(TABLE.length >= 40, `${TABLE.length} cases`);
});

for (const [input, expected] of TABLE) {
  test(`normalises ${JSON.stringify(input)}`, () => {
    assert.equal(normalizeText(input), expected);
  });
}
