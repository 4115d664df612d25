// What one audio frame is, shared by the text front end, the model, the codec and the engine (MODEL.md §1).

/** Codes per generated frame besides `main`: code[0] (semantic) and code[1..9] (residual). */
export const CODES_PER_FRAME = 10;
/** Codes of codebook 0 (the semantic codebook); the vocabulary holds one token per code. */
export const SEMANTIC_CODEBOOK_SIZE = 4096;
/** Codes of each residual codebook 1..9. */
export const RESIDUAL_CODEBOOK_SIZE = 1024;
/** The codec's sample rate in Hz: frames decode to, and references are encoded from, PCM at this rate. */
export const SAMPLE_RATE = 44100;
/** PCM samples per frame at SAMPLE_RATE. */
export const SAMPLES_PER_FRAME = 2048;
