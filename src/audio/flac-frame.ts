// One FLAC frame for a block of mono 16-bit samples: header, one subframe (constant, verbatim or a fixed
// polynomial predictor of order 0–4 with partitioned Rice-coded residuals), byte padding, CRC-16.
// Fixed predictors need no LPC analysis and decode everywhere; for speech they come within a few percent of LPC.
import type { BitWriter } from './bit-writer.ts';

const MAX_FIXED_ORDER = 4;
/** 4096 / 2^6 = 64 residuals per partition at the finest; finer partitions gain little on speech. */
const MAX_PARTITION_ORDER = 6;
/** Rice parameters above 14 need the 5-bit parameter form; 14 already costs little on 16-bit audio. */
const MAX_RICE_PARAMETER = 14;

const CRC8_TABLE = makeCrcTable(0x07, 8);
const CRC16_TABLE = makeCrcTable(0x8005, 16);

function makeCrcTable(polynomial: number, width: number): Uint16Array {
  const table = new Uint16Array(256);
  const top = 1 << (width - 1);
  const mask = (1 << width) - 1;
  for (let index = 0; index < 256; index++) {
    let remainder = index << (width - 8);
    for (let bit = 0; bit < 8; bit++) remainder = remainder & top ? (remainder << 1) ^ polynomial : remainder << 1;
    table[index] = remainder & mask;
  }
  return table;
}

export function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = CRC8_TABLE[crc ^ byte]!;
  return crc;
}

export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = crc16Step(crc, byte);
  return crc;
}

/** The CRC-16 after one more byte, for a frame's CRC kept while its end is searched for. */
export function crc16Step(crc: number, byte: number): number {
  return ((crc << 8) ^ CRC16_TABLE[(crc >> 8) ^ byte]!) & 0xffff;
}

/** Residuals of the fixed predictor of `order` for samples[order..]. */
function fixedResiduals(samples: Int32Array, order: number): Int32Array {
  const residuals = new Int32Array(samples.length - order);
  for (let index = order; index < samples.length; index++) {
    const s = samples;
    let prediction = 0;
    if (order === 1) prediction = s[index - 1]!;
    else if (order === 2) prediction = 2 * s[index - 1]! - s[index - 2]!;
    else if (order === 3) prediction = 3 * s[index - 1]! - 3 * s[index - 2]! + s[index - 3]!;
    else if (order === 4) prediction = 4 * s[index - 1]! - 6 * s[index - 2]! + 4 * s[index - 3]! - s[index - 4]!;
    residuals[index - order] = s[index]! - prediction;
  }
  return residuals;
}

const zigzag = (value: number): number => (value >= 0 ? value * 2 : -value * 2 - 1);

interface RicePlan {
  readonly partitionOrder: number;
  readonly parameters: number[];
  readonly bits: number;
}

/** The Rice parameter near log2 of the mean that minimises n·(k+1) + Σu >> k. */
function riceParameter(sum: number, count: number): number {
  const mean = count > 0 ? sum / count : 0;
  const guess = mean < 1 ? 0 : Math.min(MAX_RICE_PARAMETER, Math.floor(Math.log2(mean)));
  let best = guess;
  let bestBits = Number.POSITIVE_INFINITY;
  for (let parameter = Math.max(0, guess - 1); parameter <= Math.min(MAX_RICE_PARAMETER, guess + 1); parameter++) {
    const bits = count * (parameter + 1) + Math.floor(sum / 2 ** parameter);
    if (bits < bestBits) {
      bestBits = bits;
      best = parameter;
    }
  }
  return best;
}

/** Best partition order and per-partition Rice parameters, by the estimate n·(k+1) + Σu >> k. */
function planRice(residuals: Int32Array, blockSize: number, order: number): RicePlan {
  let maxOrder = 0;
  while (
    maxOrder < MAX_PARTITION_ORDER &&
    blockSize % (1 << (maxOrder + 1)) === 0 &&
    blockSize >> (maxOrder + 1) > order
  ) {
    maxOrder++;
  }
  // Sums of the zigzag residuals per finest partition; coarser orders add neighbours pairwise.
  let sums = new Float64Array(1 << maxOrder);
  const finestSize = blockSize >> maxOrder;
  for (let partition = 0, index = 0; partition < sums.length; partition++) {
    const end = (partition + 1) * finestSize - order;
    let sum = 0;
    for (; index < end; index++) {
      const value = residuals[index]!;
      sum += value >= 0 ? 2 * value : -2 * value - 1;
    }
    sums[partition] = sum;
  }
  let best: RicePlan | undefined;
  for (let partitionOrder = maxOrder; partitionOrder >= 0; partitionOrder--) {
    const partitionSize = blockSize >> partitionOrder;
    const parameters: number[] = [];
    let bits = 0;
    for (let partition = 0; partition < sums.length; partition++) {
      const count = partition === 0 ? partitionSize - order : partitionSize;
      const sum = sums[partition]!;
      const parameter = riceParameter(sum, count);
      parameters.push(parameter);
      bits += 4 + count * (parameter + 1) + Math.floor(sum / 2 ** parameter);
    }
    if (best === undefined || bits < best.bits) best = { partitionOrder, parameters, bits };
    if (partitionOrder > 0) {
      const coarser = new Float64Array(sums.length / 2);
      for (let partition = 0; partition < coarser.length; partition++) {
        coarser[partition] = sums[2 * partition]! + sums[2 * partition + 1]!;
      }
      sums = coarser;
    }
  }
  return best!;
}

function writeFixedSubframe(
  writer: BitWriter,
  samples: Int32Array,
  order: number,
  residuals: Int32Array,
  plan: RicePlan,
): void {
  writer.write(0, 1);
  writer.write(0b001000 | order, 6);
  writer.write(0, 1); // no wasted bits
  for (let index = 0; index < order; index++) writer.writeSigned(samples[index]!, 16);
  writer.write(0, 2); // residual coding: 4-bit Rice parameters
  writer.write(plan.partitionOrder, 4);
  const partitionSize = samples.length >> plan.partitionOrder;
  let start = 0;
  plan.parameters.forEach((parameter, partition) => {
    const count = partition === 0 ? partitionSize - order : partitionSize;
    writer.write(parameter, 4);
    for (let index = start; index < start + count; index++) {
      writer.writeRice(zigzag(residuals[index]!), parameter);
    }
    start += count;
  });
}

function writeSubframe(writer: BitWriter, samples: Int32Array): void {
  if (samples.every((sample) => sample === samples[0])) {
    writer.write(0, 1);
    writer.write(0b000000, 6); // constant
    writer.write(0, 1);
    writer.writeSigned(samples[0]!, 16);
    return;
  }
  // The order with the smallest sum of |residual| (libFLAC's choice for fixed predictors), then its Rice plan.
  let bestOrder = 0;
  let bestResiduals: Int32Array = new Int32Array(0);
  let bestMagnitude = Number.POSITIVE_INFINITY;
  for (let order = 0; order <= Math.min(MAX_FIXED_ORDER, samples.length - 1); order++) {
    const residuals = fixedResiduals(samples, order);
    let magnitude = 0;
    for (let index = 0; index < residuals.length; index++) magnitude += Math.abs(residuals[index]!);
    // Average magnitude, so that orders with fewer residuals compare fairly.
    magnitude /= Math.max(1, residuals.length);
    if (magnitude < bestMagnitude) {
      bestMagnitude = magnitude;
      bestOrder = order;
      bestResiduals = residuals;
    }
  }
  const bestPlan = planRice(bestResiduals, samples.length, bestOrder);
  if (bestPlan.bits + 16 * bestOrder >= 16 * samples.length) {
    writer.write(0, 1);
    writer.write(0b000001, 6); // verbatim
    writer.write(0, 1);
    for (const sample of samples) writer.writeSigned(sample, 16);
    return;
  }
  writeFixedSubframe(writer, samples, bestOrder, bestResiduals, bestPlan);
}

const RATE_CODES: Record<number, number> = {
  88200: 1,
  176400: 2,
  192000: 3,
  8000: 4,
  16000: 5,
  22050: 6,
  24000: 7,
  32000: 8,
  44100: 9,
  48000: 10,
  96000: 11,
};

/** The frame header's rate: a table code, or kHz / Hz / tens of Hz after the header; some parsers need it there. */
function sampleRateCode(sampleRate: number): { code: number; trailingBits: number; trailingValue: number } {
  const code = RATE_CODES[sampleRate];
  if (code !== undefined) return { code, trailingBits: 0, trailingValue: 0 };
  if (sampleRate % 1000 === 0 && sampleRate / 1000 < 256) {
    return { code: 0b1100, trailingBits: 8, trailingValue: sampleRate / 1000 };
  }
  if (sampleRate < 65536) return { code: 0b1101, trailingBits: 16, trailingValue: sampleRate };
  if (sampleRate % 10 === 0 && sampleRate / 10 < 65536) {
    return { code: 0b1110, trailingBits: 16, trailingValue: sampleRate / 10 };
  }
  return { code: 0b0000, trailingBits: 0, trailingValue: 0 };
}

/** FLAC's UTF-8-like coding of the frame number (fixed block size streams). */
function writeFrameNumber(writer: BitWriter, frameNumber: number): void {
  if (frameNumber < 0x80) {
    writer.write(frameNumber, 8);
    return;
  }
  let continuationBytes = 1;
  while (frameNumber >= 2 ** (6 * continuationBytes + 6 - continuationBytes)) continuationBytes++;
  const lead = (0xff << (7 - continuationBytes)) & 0xff;
  writer.write(lead | Math.floor(frameNumber / 2 ** (6 * continuationBytes)), 8);
  for (let index = continuationBytes - 1; index >= 0; index--) {
    writer.write(0x80 | (Math.floor(frameNumber / 2 ** (6 * index)) & 0x3f), 8);
  }
}

/** Appends one frame; `blockSize` is the stream's fixed block size, `samples` may be shorter (last block). */
export function writeFlacFrame(
  writer: BitWriter,
  samples: Int32Array,
  frameNumber: number,
  blockSize: number,
  sampleRate: number,
): void {
  const frameStart = writer.byteLength;
  writer.write(0b11111111111110, 14);
  writer.write(0, 1); // reserved
  writer.write(0, 1); // fixed block size
  const explicitSize = samples.length !== blockSize || blockSize !== 4096;
  writer.write(explicitSize ? 0b0111 : 0b1100, 4); // 0111: 16-bit size follows; 1100: 4096
  const rate = sampleRateCode(sampleRate);
  writer.write(rate.code, 4);
  writer.write(0b0000, 4); // one channel
  writer.write(0b100, 3); // 16 bits per sample
  writer.write(0, 1);
  writeFrameNumber(writer, frameNumber);
  if (explicitSize) writer.write(samples.length - 1, 16);
  if (rate.trailingBits > 0) writer.write(rate.trailingValue, rate.trailingBits);
  writer.write(crc8(writer.view(frameStart)), 8);
  writeSubframe(writer, samples);
  writer.alignToByte();
  writer.write(crc16(writer.view(frameStart)), 16);
}
