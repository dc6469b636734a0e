import { normaliseCompanyName, type LegalFormKey } from './normalise.js';
import { boundedLevenshtein } from './similarity.js';
import type { CompanyRecord } from './types.js';

/** Words shorter than this need an exact match; one typo in "ag" or "kh" is another word. */
const MIN_FUZZY_LENGTH = 4;
/** Word pairs less similar than this (1 − distance / length) do not count as a match. */
const MIN_WORD_SIMILARITY = 0.7;
/** Words of a query looked up in the index; later ones only add weight (no name is this long). */
const MAX_LOOKED_UP_WORDS = 32;

/** How much a word counts: its length, except filler words that say little about a company. */
export function wordWeight(word: string): number {
  return word === 'und' || word === 'co' ? 1 : word.length;
}

/** Name candidates of one query: record index → share of name weight that matched. */
export interface NameMatches {
  /** Record indices with at least one matching word. */
  readonly candidates: readonly number[];
  /** Dice coefficient over weighted words, 0–1, by record index. */
  dice(record: number): number;
}

/**
 * Inverted index over the words of the register's company names, with a fuzzy word look-up
 * over the vocabulary, so a search scores only the records that share a (near) word with it.
 */
export class NameIndex {
  readonly #postings = new Map<string, number[]>();
  readonly #vocabulary: string[] = [];
  readonly #legalForms: Array<LegalFormKey | undefined> = [];
  readonly #weights: Float64Array;
  readonly #similarCache = new Map<string, ReadonlyArray<readonly [string, number]>>();

  constructor(records: readonly CompanyRecord[]) {
    this.#weights = new Float64Array(records.length);
    records.forEach((record, index) => {
      const name = normaliseCompanyName(record.company);
      this.#legalForms.push(name.legalForm);
      for (const token of name.tokens) {
        this.#weights[index] = (this.#weights[index] ?? 0) + wordWeight(token);
        let list = this.#postings.get(token);
        if (!list) {
          list = [];
          this.#postings.set(token, list);
          this.#vocabulary.push(token);
        }
        list.push(index);
      }
    });
  }

  /** Canonical legal form of the record at `index`. */
  legalForm(index: number): LegalFormKey | undefined {
    return this.#legalForms[index];
  }

  /** Vocabulary words similar to `word`, with their similarity; cached per word. */
  similarWords(word: string): ReadonlyArray<readonly [string, number]> {
    const cached = this.#similarCache.get(word);
    if (cached) return cached;
    const found: Array<readonly [string, number]> = [];
    if (word.length < MIN_FUZZY_LENGTH) {
      if (this.#postings.has(word)) found.push([word, 1]);
    } else {
      for (const candidate of this.#vocabulary) {
        const longer = Math.max(word.length, candidate.length);
        const maxDistance = Math.floor(longer * (1 - MIN_WORD_SIMILARITY));
        const distance = boundedLevenshtein(word, candidate, maxDistance);
        if (distance <= maxDistance) found.push([candidate, 1 - distance / longer]);
      }
    }
    // Bounded: queries are user input, the cache must not grow without limit.
    if (this.#similarCache.size >= 10_000) this.#similarCache.clear();
    this.#similarCache.set(word, found);
    return found;
  }

  /** Records whose names share words with `tokens`, and their weighted Dice similarity. */
  match(tokens: readonly string[]): NameMatches {
    const matched = new Map<number, number>();
    let queryWeight = 0;
    for (const [position, token] of tokens.entries()) {
      const weight = wordWeight(token);
      queryWeight += weight;
      if (position >= MAX_LOOKED_UP_WORDS) continue;
      // Best similarity per record for this query word, so two near words do not add up.
      const best = new Map<number, number>();
      for (const [word, sim] of this.similarWords(token)) {
        // Squared so a near word counts clearly less than the word itself: "Hofmann" and
        // "Hoffmann" are usually two different companies.
        const credit = sim * sim;
        for (const index of this.#postings.get(word) ?? []) {
          if (credit > (best.get(index) ?? 0)) best.set(index, credit);
        }
      }
      for (const [index, sim] of best) matched.set(index, (matched.get(index) ?? 0) + sim * weight);
    }
    const weights = this.#weights;
    return {
      candidates: [...matched.keys()],
      dice(index) {
        const total = queryWeight + (weights[index] ?? 0);
        return total === 0 ? 0 : Math.min(1, (2 * (matched.get(index) ?? 0)) / total);
      },
    };
  }
}
