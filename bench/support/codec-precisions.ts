// The codec precisions a codec bench runs: all three (the default first), or those an environment variable names.
import type { CodecPrecision } from '../../src/backend/cuda/ops/codecConvArguments.ts';

const ALL: readonly CodecPrecision[] = ['f16', 'f16-weights', 'f32'];

/** ALL, or those of ALL listed comma-separated in process.env[variable]. */
export function benchPrecisions(variable: string): CodecPrecision[] {
  const asked = process.env[variable];
  return asked === undefined || asked === ''
    ? [...ALL]
    : ALL.filter((precision) => asked.split(',').includes(precision));
}
