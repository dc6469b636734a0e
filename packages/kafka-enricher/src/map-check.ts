import type { Decoded } from './message-codec.js';

/** Messages looked at before {@link MapCheck} speaks up. */
export const MAP_CHECK_MESSAGES = 50;

/**
 * Watches the messages a run delivers until one is read with --map. When the first
 * {@link MAP_CHECK_MESSAGES} JSON objects all lack a mapped field (or hold one of the wrong type), --map is most likely wrong (a typo
 * in a pointer) and every message goes on to the DLQ: it says so once, naming the fields, and what
 * to do (README "DLQ"). The run goes on: a topic may hold other messages first.
 */
export class MapCheck {
  readonly #say: (text: string) => void;
  #seen = 0;
  #done = false;
  /** Per mapped field, how the messages failed it: `street (/adress/street) is missing or empty` → count. */
  readonly #failures = new Map<string, number>();

  constructor(say: (text: string) => void) {
    this.#say = say;
  }

  /** Looks at a delivered chunk's decoded messages, in offset order. */
  observe(decoded: readonly Decoded[]): void {
    for (const d of decoded) {
      if (this.#done) return;
      if (d.kind === 'record') {
        // One message read with --map: it is not all wrong.
        this.#done = true;
        return;
      }
      // A tombstone; not JSON, not an object, empty: nothing to say about --map.
      if (d.kind === 'tombstone' || d.mapping === undefined) continue;
      const { field, pointer } = d.mapping;
      const what = `${field} (${pointer.text}) ${d.code === 'missing-field' ? 'is missing or empty' : 'is not a string or number'}`;
      this.#failures.set(what, (this.#failures.get(what) ?? 0) + 1);
      if (++this.#seen === MAP_CHECK_MESSAGES) {
        this.#done = true;
        const fields = [...this.#failures].map(([w, n]) => `${w} in ${n}`).join(', ');
        this.#say(
          `none of the first ${MAP_CHECK_MESSAGES} messages could be read with --map, so each went to the DLQ: mapped field ${fields}. ` +
            `If --map is wrong, stop dq-kafka, correct it and produce the dead letters to the input topic again (each names its input offset)`,
        );
      }
    }
  }
}
