// The frames the engine hands the codec are the sampler's own: a code outside its codebook is a defect of the
// sampler or the model, never of the request. The codec clamps codes as the reference vocoder does, which would
// hide such a defect as plausible audio; the engine's codec stream refuses the frame by name instead (the request
// fails with ENGINE_CODE_OUT_OF_RANGE, counted under that code in /metrics, and the server keeps serving).
import type { CodecConfig } from '../codec/config.ts';
import { DramaError } from '../errors.ts';
import type { CodecStream, Frame } from '../model/types.ts';

/** Refuses the first code of `frames` outside its codebook: codebook 0 semantic, the others residual. */
export function checkEngineCodes(frames: readonly Frame[], config: CodecConfig): void {
  frames.forEach((frame, row) => {
    for (let codebook = 0; codebook < frame.length; codebook++) {
      const size = codebook === 0 ? config.semanticCodebookSize : config.residualCodebookSize;
      const code = frame[codebook]!;
      if (Number.isInteger(code) && code >= 0 && code < size) continue;
      throw new DramaError(
        'ENGINE_CODE_OUT_OF_RANGE',
        `the engine produced code ${code} for codebook ${codebook} in frame ${row} of a decode group, outside ` +
          `[0, ${size}): a sampler or model defect, not the request's`,
        { kind: 'internal' },
      );
    }
  });
}

/** The codec stream the engine decodes through: every frame checked before the codec sees it. */
export function checkedStream(stream: CodecStream, config: CodecConfig): CodecStream {
  return {
    push(frames) {
      checkEngineCodes(frames, config);
      return stream.push(frames);
    },
    close: () => stream.close?.(),
  };
}
