// The checkpoint's text tokenizer (`tokenizer.json`): the official `tokenizers` binding when its native binary loads,
// else the pure TypeScript `@huggingface/tokenizers` (same ids, checked against the Python oracle fixture).
// encode() returns int32 ids with no special tokens added; added tokens found in the text are matched as the
// reference does, which is why callers refuse structural tokens in user text before encoding it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as FallbackTokenizer } from '@huggingface/tokenizers';
import { DramaError } from '../errors.ts';
import { SEMANTIC_CODEBOOK_SIZE } from '../shared/frame.ts';
import { loadNativeBinding, NativeEncoder } from './nativeEncoder.ts';
import { IM_END, IM_START, SPEAKER_TAG_COUNT, semanticToken, speakerTag, VOICE } from './vocabulary.ts';

export type TokenizerImplementation = 'native' | 'fallback';

export interface TokenizerLoadOptions {
  /** Force one implementation (tests check both); by default native, falling back when it cannot load. */
  readonly implementation?: TokenizerImplementation;
}

interface Encoder {
  encode(text: string): Int32Array;
  close(): Promise<void>;
}

class FallbackEncoder implements Encoder {
  constructor(private readonly tokenizer: FallbackTokenizer) {}

  encode(text: string): Int32Array {
    return Int32Array.from(this.tokenizer.encode(text, { add_special_tokens: false }).ids);
  }

  async close(): Promise<void> {}
}

function readJson(path: string): object {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as object;
  } catch (error) {
    throw new DramaError('TOKENIZER_UNREADABLE', `${path} is not readable JSON: ${String(error)}`, {
      kind: 'bad_checkpoint',
      cause: error,
    });
  }
}

export class Tokenizer {
  readonly implementation: TokenizerImplementation;
  /** Why the native binding is not in use, when it is not. */
  readonly fallbackReason: string | undefined;
  /** Largest id + 1, added tokens included. */
  readonly vocabularySize: number;
  /** Id of `<|semantic:0|>`; `<|semantic:k|>` is semanticBegin + k. */
  readonly semanticBegin: number;
  readonly semanticCount = SEMANTIC_CODEBOOK_SIZE;
  readonly imEnd: number;
  /** Content of every added token (Qwen's and Drama's): text the encoder would turn into one special id. */
  readonly addedTokens: readonly string[];
  private readonly encoder: Encoder;
  private readonly vocabulary: Map<string, number>;

  private constructor(
    implementation: TokenizerImplementation,
    fallbackReason: string | undefined,
    encoder: Encoder,
    vocabulary: Map<string, number>,
    addedTokens: readonly string[],
  ) {
    this.implementation = implementation;
    this.addedTokens = addedTokens;
    this.fallbackReason = fallbackReason;
    this.encoder = encoder;
    this.vocabulary = vocabulary;
    let largest = -1;
    for (const id of vocabulary.values()) largest = Math.max(largest, id);
    this.vocabularySize = largest + 1;
    for (const name of [IM_START, IM_END, VOICE]) this.tokenId(name);
    for (let speaker = 0; speaker < SPEAKER_TAG_COUNT; speaker++) this.tokenId(speakerTag(speaker));
    this.semanticBegin = this.tokenId(semanticToken(0));
    this.imEnd = this.tokenId(IM_END);
    for (let code = 1; code < SEMANTIC_CODEBOOK_SIZE; code++) {
      const id = this.tokenId(semanticToken(code));
      if (id !== this.semanticBegin + code) {
        throw new DramaError(
          'TOKENIZER_SEMANTIC_NOT_CONTIGUOUS',
          `${semanticToken(code)} has id ${id}, expected ${this.semanticBegin + code} (semantic tokens must be contiguous)`,
          { kind: 'bad_checkpoint' },
        );
      }
    }
  }

  static async load(checkpointDir: string, options: TokenizerLoadOptions = {}): Promise<Tokenizer> {
    const tokenizerPath = join(checkpointDir, 'tokenizer.json');
    if (!existsSync(tokenizerPath)) {
      throw new DramaError('TOKENIZER_NOT_FOUND', `no tokenizer.json in ${checkpointDir}`, { kind: 'bad_checkpoint' });
    }
    const tokenizerJson = readJson(tokenizerPath) as { added_tokens?: { content: string }[] };
    const addedTokens = (tokenizerJson.added_tokens ?? []).map((token) => token.content);
    let fallbackReason = 'the fallback was requested';
    if (options.implementation !== 'fallback') {
      const binding = loadNativeBinding();
      if ('bindingPath' in binding) {
        const { encoder, vocabulary } = await NativeEncoder.start(binding.bindingPath, tokenizerPath);
        return Tokenizer.create('native', undefined, encoder, new Map(Object.entries(vocabulary)), addedTokens);
      }
      if (options.implementation === 'native') {
        throw new DramaError(
          'TOKENIZER_NATIVE_UNAVAILABLE',
          `the native tokenizers binding cannot load: ${binding.failure}`,
          {
            kind: 'internal',
          },
        );
      }
      fallbackReason = `the native tokenizers binding cannot load: ${binding.failure}`;
    }
    const configPath = join(checkpointDir, 'tokenizer_config.json');
    const config = existsSync(configPath) ? readJson(configPath) : {};
    let fallback: FallbackTokenizer;
    try {
      fallback = new FallbackTokenizer(tokenizerJson, config);
    } catch (error) {
      throw new DramaError('TOKENIZER_UNREADABLE', `tokenizer ${tokenizerPath} could not be loaded: ${String(error)}`, {
        kind: 'bad_checkpoint',
        cause: error,
      });
    }
    const encoder = new FallbackEncoder(fallback);
    return Tokenizer.create('fallback', fallbackReason, encoder, fallback.get_vocab(true), addedTokens);
  }

  private static async create(
    implementation: TokenizerImplementation,
    fallbackReason: string | undefined,
    encoder: Encoder,
    vocabulary: Map<string, number>,
    addedTokens: readonly string[],
  ): Promise<Tokenizer> {
    try {
      return new Tokenizer(implementation, fallbackReason, encoder, vocabulary, addedTokens);
    } catch (error) {
      await encoder.close();
      throw error;
    }
  }

  /** Token ids of `text`, special tokens not added. [T] */
  encode(text: string): Int32Array {
    return this.encoder.encode(text);
  }

  /** Id of the token named `name` (e.g. `<|im_end|>`); refuses a name the vocabulary lacks. */
  tokenId(name: string): number {
    const id = this.vocabulary.get(name);
    if (id === undefined) {
      throw new DramaError('TOKEN_NOT_IN_VOCABULARY', `the tokenizer has no token ${JSON.stringify(name)}`, {
        kind: 'bad_checkpoint',
      });
    }
    return id;
  }

  /** One line for logs: which implementation is in use, and why when it is the fallback. */
  describe(): string {
    return this.implementation === 'native'
      ? 'tokenizer: native tokenizers binding'
      : `tokenizer: pure TypeScript fallback (${this.fallbackReason})`;
  }

  /** Stops the native worker, if any. */
  close(): Promise<void> {
    return this.encoder.close();
  }
}
