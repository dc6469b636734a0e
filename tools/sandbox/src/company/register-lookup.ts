import type { SearchFilter } from './company-search.js';
import { foldCase, squash, words } from './normalise.js';
import { similarity } from './similarity.js';
import type { CompanyHit, CompanyRecord } from './types.js';

/** Input fields of searchMethod `tr` (contract 4.7), already type-checked. */
export interface RegisterLookupInput {
  readonly trCourt: string;
  /** Upper-cased register type, e.g. HRB. */
  readonly trType: string;
  readonly trNo: number;
}

/** Register types of German registry courts; only HRA and HRB entries exist in the sandbox. */
export const REGISTER_TYPES = ['HRA', 'HRB', 'GNR', 'PR', 'VR', 'GSR'] as const;

// Words people put around the court's place name: "Amtsgericht", "AG", "Registergericht".
const COURT_NOISE = new Set(['amtsgericht', 'registergericht', 'handelsregister', 'ag', 'bei', 'dem']);

// Well-known spellings that neither folding nor a small typo turns into the court's own name.
const COURT_ALIASES: Readonly<Record<string, readonly string[]>> = {
  'Amtsgericht Charlottenburg': ['berlin', 'berlin charlottenburg'],
  'Amtsgericht Frankfurt am Main': ['frankfurt', 'frankfurt a m', 'frankfurt a main', 'frankfurt main', 'frankfurt m'],
  'Amtsgericht Freiburg': ['freiburg im breisgau', 'freiburg i br', 'freiburg i breisgau', 'freiburg breisgau'],
  'Amtsgericht München': ['munich'],
  'Amtsgericht Köln': ['cologne'],
  'Amtsgericht Nürnberg': ['nuremberg'],
};

/** Score of an alias or umlaut-less spelling, and the most a fuzzy court match can reach. */
const ALIAS_SCORE = 95;
const FUZZY_CEILING = 94;
const MIN_COURT_SIMILARITY = 0.75;

/** The court's place name, folded: "Amtsgericht Frankfurt am Main" → "frankfurt am main". */
function courtKey(text: string): string {
  return words(text)
    .filter((word) => !COURT_NOISE.has(word))
    .join(' ');
}

/** Same, with umlauts dropped instead of spelt out: "münchen" → "munchen". */
function plainKey(text: string): string {
  const plain = text.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
  return courtKey(plain);
}

interface CourtEntry {
  readonly name: string;
  readonly keys: ReadonlySet<string>;
}

/** Exact look-up by court, type and number with tolerance for how the court is spelt. */
export class RegisterLookup {
  readonly #byEntry = new Map<string, CompanyRecord>();
  readonly #courts: CourtEntry[] = [];

  constructor(records: readonly CompanyRecord[]) {
    const names = new Set<string>();
    for (const record of records) {
      this.#byEntry.set(`${record.trCourt}|${record.trType}|${record.trNo}`, record);
      names.add(record.trCourt);
    }
    for (const name of names) {
      const keys = new Set([courtKey(name), plainKey(name), ...(COURT_ALIASES[name] ?? [])]);
      this.#courts.push({ name, keys });
    }
  }

  /**
   * How well `input` names `court`, 0–100: 100 identical, 99 equal but for case and umlaut
   * spelling, 95 a known alias or the place name alone ("AG München", "Berlin"), below that by
   * edit distance ("Charlotenburg" → 88), 0 when too far off.
   */
  #courtScore(input: string, court: CourtEntry): number {
    if (squash(input) === court.name) return 100;
    if (foldCase(squash(input)) === foldCase(court.name)) return 99;
    const key = courtKey(input);
    if (court.keys.has(key) || court.keys.has(plainKey(input))) return ALIAS_SCORE;
    let best = 0;
    for (const known of court.keys) best = Math.max(best, similarity(key, known));
    return best < MIN_COURT_SIMILARITY ? 0 : Math.min(FUZZY_CEILING, Math.round(100 * best) - 5);
  }

  /** Every entry with this type and number at a court whose score reaches minScore, best first. */
  lookup(input: RegisterLookupInput, filter: SearchFilter): CompanyHit[] {
    const hits: CompanyHit[] = [];
    for (const court of this.#courts) {
      const record = this.#byEntry.get(`${court.name}|${input.trType}|${input.trNo}`);
      if (!record || (record.trStatus === 'inactive' && !filter.includeDeleted)) continue;
      const score = this.#courtScore(input.trCourt, court);
      if (score >= filter.minScore && score > 0) hits.push({ ...record, searchMethod: 'tr', searchScore: score });
    }
    return hits.sort((a, b) => b.searchScore - a.searchScore || a.id - b.id);
  }
}
