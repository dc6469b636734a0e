/** Text edits that turn reference spellings into the kinds of input people and systems produce. */
import type { Random } from '../prng.js';

const TYPO_LETTERS = 'abcdefghiklmnoprstuvwz';

/** One random typing error (substitution, deletion, insertion, swap) in a lower-case ASCII letter after the first character. */
export function oneTypo(random: Random, text: string): string {
  const positions: number[] = [];
  for (let i = 1; i < text.length; i++) if (/[a-z]/.test(text[i] as string)) positions.push(i);
  if (positions.length === 0) return text;
  const at = random.pick(positions);
  const letter = (): string => random.pick([...TYPO_LETTERS].filter((ch) => ch !== text[at]));
  switch (random.int(0, 3)) {
    case 0:
      return text.slice(0, at) + letter() + text.slice(at + 1);
    case 1:
      return text.slice(0, at) + text.slice(at + 1);
    case 2:
      return text.slice(0, at) + letter() + text.slice(at);
    default: {
      const next = text[at + 1];
      if (next === undefined || !/[a-z]/.test(next) || next === text[at]) return text.slice(0, at) + text.slice(at + 1);
      return text.slice(0, at) + next + (text[at] as string) + text.slice(at + 2);
    }
  }
}

/** ß → ss (what keyboards without ß produce). */
export function eszettAsSs(text: string): string {
  return text.replace(/ß/g, 'ss');
}

/** ä → ae, Ö → Oe, ... (umlauts transcribed). */
export function umlautsTranscribed(text: string): string {
  const map: Readonly<Record<string, string>> = { ä: 'ae', ö: 'oe', ü: 'ue', Ä: 'Ae', Ö: 'Oe', Ü: 'Ue' };
  return text.replace(/[äöüÄÖÜ]/g, (ch) => map[ch] ?? ch);
}

/** Doubled inner spaces and stray outer ones. */
export function extraSpaces(text: string): string {
  return ` ${text.replace(/ /g, '  ')}  `;
}

const INVENTED_STREET_STEMS = [
  'Quitten',
  'Zypressen',
  'Mispel',
  'Wacholder',
  'Schlehen',
  'Brombeer',
  'Hagebutten',
  'Mammut',
  'Flamingo',
  'Pinguin',
  'Zebra',
  'Kolibri',
];
const INVENTED_STREET_ENDS = ['pfad', 'steig', 'hang', 'bogen', 'zeile', 'stieg', 'winkel', 'kamp'];
const INVENTED_TOWN_STEMS = ['Ober', 'Unter', 'Nieder', 'Hinter', 'Vorder', 'Klein', 'Groß'];
const INVENTED_TOWN_ENDS = ['quappenhausen', 'zwiebelbrunn', 'mooskirchingen', 'schnakenbüttel', 'krähwinkelrode', 'kieselsdorfen'];

/** A street name that exists nowhere, such as "Zypressenpfad". */
export function inventedStreet(random: Random): string {
  return random.pick(INVENTED_STREET_STEMS) + random.pick(INVENTED_STREET_ENDS);
}

/** A town name that exists nowhere, such as "Unterzwiebelbrunn". */
export function inventedTown(random: Random): string {
  return random.pick(INVENTED_TOWN_STEMS) + random.pick(INVENTED_TOWN_ENDS);
}
