// Contract case for Snake alone (kernels/cuda/codec_conv.cu's codec_snake, the function every codec conv applies to
// its input) against the cpu codec's Snake (src/codec/conv.ts): one decoder row at 1536 channels, a frame of the
// last block (2048 rows × 96), odd sizes.
import { codecSnake } from '../../../src/backend/cuda/ops/codecConv.ts';
import { cpuSnake, snakeAlpha, widen } from './codecCases.ts';
import type { KernelCase, ShapeCase } from './contract.ts';
import { randomFloat32 } from './random.ts';

/**
 * sinf (1 ulp), the square and the reciprocal (½ ulp each) on a term of up to 1/α = 4, one rounding of the sum:
 * about 5 ulps at the output's RMS where the term dominates.
 */
export const SNAKE_BOUND = 1e-6;
export const SNAKE_ULPS = 8;

function snakeShape(label: string, rows: number, channels: number): ShapeCase {
  return {
    label: `${label} [${rows} rows × ${channels}]`,
    prepare(random, nonFinite) {
      const alpha = snakeAlpha(random, channels);
      const x = randomFloat32(random, rows * channels, 2);
      if (nonFinite) {
        x[1] = Number.NaN;
        x[rows * channels - 1] = Number.POSITIVE_INFINITY;
        x[Math.floor(rows / 2) * channels] = Number.NEGATIVE_INFINITY;
      }
      return {
        inputs: { x, alpha },
        outputs: [{ name: 'out', kind: 'f32', count: rows * channels, ulpFloor: 1 }],
        reference: () => ({ out: widen(cpuSnake(x, rows, channels, alpha)) }),
        run(cuda, p, kernel) {
          codecSnake(cuda, { out: p.out!, x: p.x!, alpha: p.alpha!, rows, channels }, { kernel });
        },
      };
    },
  };
}

export const codecSnakeCase: KernelCase = {
  name: 'codec Snake x + sin²(αx)/(α + 1e-9)',
  bound: SNAKE_BOUND,
  ulps: SNAKE_ULPS,
  shapes: [
    snakeShape('one row, decoder width', 1, 1536),
    snakeShape('one frame of the last block', 2048, 96),
    snakeShape('odd sizes', 37, 45),
  ],
};
