/** Where one result's line is in the resume cache's file. */
export interface Location {
  /** Byte offset of the line. */
  readonly offset: number;
  /** Byte length of the line, newline included. */
  readonly length: number;
}

/** Three 32-bit words hashed from a key (see {@link digestOf}). */
export type Digest = readonly [number, number, number];

/**
 * A 96-bit digest of `key`: three FNV-1a streams with different primes over its UTF-16 code units,
 * each finished with murmur3's avalanche. Not cryptographic, and it need not be: equal digests
 * only make the index read a line whose key is then compared.
 */
export function digestOf(key: string): Digest {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  let c = 0x2166136b;
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    a = Math.imul(a ^ unit, 0x01000193);
    b = Math.imul(b ^ unit, 0x5bd1e995);
    c = Math.imul(c ^ unit, 0x85ebca6b);
  }
  return [avalanche(a), avalanche(b), avalanche(c)];
}

function avalanche(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const WAYS = 4; // slots per set: a new entry replaces the least recently used of its set
const LENGTH_LIMIT = 2 ** 20; // line bytes; packed as offset × 2^20 + length, exact below 2^53
const OFFSET_LIMIT = 2 ** 33; // file bytes (8 GiB)

/**
 * The resume cache's index: key digest → where the line is, in typed arrays allocated once, so its
 * memory is the same at the first row and the millionth (24 bytes a slot, off the JS heap). It is
 * 4-way set associative: a {@link Digest}'s first word picks a set of four slots, the other two are
 * its tag, and a new entry replaces the least recently used slot of the set. A tag match is only a
 * hint: the reader checks that the line holds the same key. Lines of 1 MiB or more, or past the
 * file's first 8 GiB, are not indexed (their results are bought again if they repeat).
 */
export class ResultIndex {
  readonly #mask: number;
  readonly #tags: Uint32Array; // two words per slot
  readonly #where: Float64Array; // 0: empty
  readonly #used: Float64Array; // use stamp per slot
  #clock = 0;
  #size = 0;

  /** @param capacity entries held at least (rounded up to a power of two). */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`cache size must be a positive integer, got ${capacity}`);
    }
    const sets = 2 ** Math.ceil(Math.log2(Math.ceil(capacity / WAYS)));
    this.#mask = sets - 1;
    this.#tags = new Uint32Array(sets * WAYS * 2);
    this.#where = new Float64Array(sets * WAYS);
    this.#used = new Float64Array(sets * WAYS);
  }

  /** Entries held. */
  get size(): number {
    return this.#size;
  }

  /** Slots in all (the most entries held). */
  get capacity(): number {
    return this.#where.length;
  }

  /** Where the line of `digest` is; it becomes the most recently used one of its set. */
  get(digest: Digest): Location | undefined {
    const slot = this.#find(digest);
    if (slot === -1) return undefined;
    this.#used[slot] = ++this.#clock;
    const packed = this.#where[slot] as number;
    const length = packed % LENGTH_LIMIT;
    return { offset: (packed - length) / LENGTH_LIMIT, length };
  }

  /** Records where the line of `digest` is, replacing the set's least recently used entry if full. */
  set(digest: Digest, location: Location): void {
    if (location.length >= LENGTH_LIMIT || location.offset >= OFFSET_LIMIT || location.length < 1) return;
    let slot = this.#find(digest);
    if (slot === -1) {
      const first = (digest[0] & this.#mask) * WAYS;
      slot = first;
      for (let s = first; s < first + WAYS; s++) {
        if (this.#where[s] === 0) {
          slot = s;
          break;
        }
        if ((this.#used[s] as number) < (this.#used[slot] as number)) slot = s;
      }
      if (this.#where[slot] === 0) this.#size += 1;
      this.#tags[slot * 2] = digest[1];
      this.#tags[slot * 2 + 1] = digest[2];
    }
    this.#where[slot] = location.offset * LENGTH_LIMIT + location.length;
    this.#used[slot] = ++this.#clock;
  }

  #find(digest: Digest): number {
    const first = (digest[0] & this.#mask) * WAYS;
    const [, hi, lo] = digest;
    for (let s = first; s < first + WAYS; s++) {
      if (this.#where[s] !== 0 && this.#tags[s * 2] === hi && this.#tags[s * 2 + 1] === lo) return s;
    }
    return -1;
  }
}

/**
 * A small bounded map, least recently used entry evicted first (the cache's parsed results). A
 * `Map` keeps insertion order, so re-inserting on every hit makes its first key the LRU one.
 */
export class LruMap<V> {
  readonly #entries = new Map<string, V>();
  readonly #max: number;

  /** @param maxEntries most entries kept (≥ 1). */
  constructor(maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`cache size must be a positive integer, got ${maxEntries}`);
    }
    this.#max = maxEntries;
  }

  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
  }
}
