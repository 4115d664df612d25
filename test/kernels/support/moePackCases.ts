// Contract case for the device re-layout of experts into the grouped GEMMs' fragment layout (kernels/cuda/
// moe_pack.cu via src/backend/cuda/ops/moePack.ts) against the host packers of src/backend/cuda/moeWeights.ts: three
// experts packed side by side into one buffer by one launch, every byte exactly equal (compared as int32 words). Their
// source rows lie in one input in another order than the experts' (the last expert's first), so only the pointer
// table says which rows are whose. FP8 and bf16, gate|up (interleaved) and down, at the real dimensions (hidden 2048,
// intermediate 512) and the smallest ones.
import { packDownBf16, packDownFp8, packGateUpBf16, packGateUpFp8 } from '../../../src/backend/cuda/moeWeights.ts';
import { moeGatherWords, moePackRows } from '../../../src/backend/cuda/ops/moePack.ts';
import type { KernelCase, Prepared, ShapeCase } from './contract.ts';
import { words } from './moeScenario.ts';
import type { Random } from './random.ts';

const EXPERTS = 3;

type Format = 'fp8' | 'bf16';
type Part = 'gate|up' | 'down';

function randomBytes(random: Random, count: number): Uint8Array {
  const bytes = new Uint8Array(count);
  for (let index = 0; index < count; index++) bytes[index] = random.integer(256);
  return bytes;
}

const halves = (bytes: Uint8Array) => new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);

/** What the host packers write for `EXPERTS` experts of one part. */
function referencePacked(format: Format, part: Part, hidden: number, inner: number, sources: Uint8Array[][]) {
  const element = format === 'fp8' ? 1 : 2;
  const target = new Uint8Array(EXPERTS * (part === 'gate|up' ? 2 : 1) * hidden * inner * element);
  for (let e = 0; e < EXPERTS; e++) {
    const [first, second] = sources[e]!;
    if (format === 'fp8' && part === 'gate|up') packGateUpFp8(first!, second!, hidden, inner, target, e);
    if (format === 'fp8' && part === 'down') packDownFp8(first!, hidden, inner, target, e);
    if (format === 'bf16' && part === 'gate|up') {
      packGateUpBf16(halves(first!), halves(second!), hidden, inner, halves(target), e);
    }
    if (format === 'bf16' && part === 'down') packDownBf16(halves(first!), hidden, inner, halves(target), e);
  }
  return new Int32Array(target.buffer.slice(0));
}

function packShape(format: Format, part: Part, hidden: number, inner: number): ShapeCase {
  const element = format === 'fp8' ? 1 : 2;
  const interleaved = part === 'gate|up';
  // gate|up rows are hidden wide, 2·inner of them in 16-row groups; down rows are inner wide, hidden of them.
  const rowBytes = (interleaved ? hidden : inner) * element;
  const rows = interleaved ? inner : hidden;
  const groups = interleaved ? (2 * inner) / 16 : hidden / 16;
  const expertBytes = groups * 16 * rowBytes;
  return {
    label: `${format} ${part} of ${EXPERTS} experts, hidden ${hidden}, intermediate ${inner}`,
    prepare(random): Prepared {
      const sources = Array.from({ length: EXPERTS }, () =>
        Array.from({ length: interleaved ? 2 : 1 }, () => randomBytes(random, rows * rowBytes)),
      );
      // Source s of expert e sits at run (EXPERTS − 1 − e) · sourcesPerExpert + s of the input.
      const perExpert = sources[0]!.length;
      const runBytes = rows * rowBytes;
      const all = new Uint8Array(EXPERTS * perExpert * runBytes);
      const offsets = new BigInt64Array(2 * EXPERTS);
      sources.forEach((list, e) => {
        list.forEach((bytes, s) => {
          const offset = ((EXPERTS - 1 - e) * perExpert + s) * runBytes;
          all.set(bytes, offset);
          offsets[2 * e + s] = BigInt(offset);
          if (!interleaved) offsets[2 * e + 1] = BigInt(offset);
        });
      });
      return {
        inputs: { rows: words(all), table: new Int32Array(offsets.buffer) },
        outputs: [{ name: 'packed', kind: 'i32', count: (EXPERTS * expertBytes) / 4 }],
        reference: () => ({ packed: referencePacked(format, part, hidden, inner, sources) }),
        run(cuda, p, kernel) {
          const shape = { rowBytes, groups, interleaved, experts: EXPERTS, targetStride: expertBytes };
          moePackRows(cuda, { ...shape, target: p.packed!, base: p.rows!, sources: p.table! }, { kernel });
        },
      };
    },
  };
}

export const moePackCase: KernelCase = {
  name: 'moe expert re-layout (fragment order, on the device)',
  bound: 0,
  ulps: 0,
  shapes: [
    packShape('fp8', 'gate|up', 2048, 512),
    packShape('fp8', 'down', 2048, 512),
    packShape('bf16', 'gate|up', 2048, 512),
    packShape('bf16', 'down', 2048, 512),
    packShape('fp8', 'gate|up', 128, 8),
    packShape('fp8', 'down', 16, 128),
    packShape('bf16', 'gate|up', 64, 8),
    packShape('bf16', 'down', 16, 64),
  ],
};

/** Runs of `words` random words gathered end to end by one launch; the runs lie in the input reversed, with a gap. */
function gatherShape(runs: number, words: number): ShapeCase {
  return {
    label: `${runs} runs of ${words} words gathered`,
    prepare(random): Prepared {
      const stride = words + 3;
      const data = new Int32Array(runs * stride);
      for (let index = 0; index < data.length; index++) data[index] = random.integer(1 << 30) - (1 << 29);
      const offsets = new BigInt64Array(runs);
      const gathered = new Int32Array(runs * words);
      for (let run = 0; run < runs; run++) {
        const first = (runs - 1 - run) * stride + 1;
        offsets[run] = BigInt(first * 4);
        gathered.set(data.subarray(first, first + words), run * words);
      }
      return {
        inputs: { data, table: new Int32Array(offsets.buffer) },
        outputs: [{ name: 'gathered', kind: 'i32', count: runs * words }],
        reference: () => ({ gathered }),
        run(cuda, p, kernel) {
          moeGatherWords(cuda, { target: p.gathered!, base: p.data!, offsets: p.table!, runs, words }, { kernel });
        },
      };
    },
  };
}

export const moeGatherWordsCase: KernelCase = {
  name: 'moe expert scales gathered (on the device)',
  bound: 0,
  ulps: 0,
  // The real FP8 experts' scales: 2 · 256 gate and up runs of 4 · 16 blocks; then small and single runs.
  shapes: [gatherShape(512, 64), gatherShape(3, 5), gatherShape(1, 300)],
};
