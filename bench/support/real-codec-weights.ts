// The codec benches' weights: the real codec geometry with synthetic values (one seed, so every run and bench codes
// the same), with the time they took to make said.
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { type CodecWeights, loadCodecWeights } from '../../src/codec/weights.ts';

export function realCodecWeights(): CodecWeights {
  const started = performance.now();
  const weights = loadCodecWeights(
    synthesizeCodecWeights(REAL_CODEC_CONFIG, 20261201),
    REAL_CODEC_CONFIG,
    'synthetic codec',
  );
  console.log(`synthetic real-geometry codec weights made in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return weights;
}
