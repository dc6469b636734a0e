/**
 * Deterministic dirty address inputs with known truth, drawn from the reference data: the
 * labelled set behind the matcher's accuracy test and the CSV demo's sample. Each variant is one
 * kind of mistake with the class the matcher is meant to give it; the presentation (separate
 * fields, addressLine, localityLine or both) is chosen independently.
 */
import { countryIndex, referenceCountries } from './country-index.js';
import type { CountryIndex } from './country-index.js';
import { CountryNotAvailableError } from './errors.js';
import { createRandom } from '../prng.js';
import type { Random } from '../prng.js';
import type { RefSegment, RefStreet } from './reference-data.js';
import type { AddressInput, Candidate, ResultClass } from './types.js';
import { VARIANTS } from './dirty-variants.js';
import type { Picked } from './dirty-variants.js';

/** One generated input with the class it is meant to get and, for A–D, the address it means. */
export interface DirtyInput {
  input: AddressInput;
  intendedClass: ResultClass;
  /** The intended candidate (without coordinates or `_meta`); absent for E and F. */
  truth?: Candidate;
  /** Mistake and presentation, e.g. `street-typo+address-line`. */
  variant: string;
}

/** Options of {@link generateDirtyInputs}. */
export interface DirtyInputOptions {
  /** Same seed, same list. Default 1. */
  seed?: number;
  /** Only this country; default: 80 % DE, 20 % AT. */
  country?: string;
}

type Presentation = 'fields' | 'address-line' | 'locality-line' | 'both-lines';

function pickAddress(random: Random, index: CountryIndex): Picked {
  const street = random.pick(index.streets);
  const segment: RefSegment = random.pick(street.segments);
  const number = segment.from + 2 * random.int(0, Math.floor((segment.to - segment.from) / 2));
  return { index, town: street.town, street: street as RefStreet, segment, number };
}

function present(country: string, fields: { street: string; houseNumber: string; postalCode: string; locality: string }, how: Presentation): AddressInput {
  const input: AddressInput = { country };
  if (how === 'address-line' || how === 'both-lines') {
    input.addressLine = fields.houseNumber === '' ? fields.street : `${fields.street} ${fields.houseNumber}`;
  } else {
    input.street = fields.street;
    if (fields.houseNumber !== '') input.houseNumber = fields.houseNumber;
  }
  if (how === 'locality-line' || how === 'both-lines') {
    input.localityLine = fields.postalCode === '' ? fields.locality : `${fields.postalCode} ${fields.locality}`;
  } else {
    input.postalCode = fields.postalCode;
    input.locality = fields.locality;
  }
  return input;
}

function presentation(random: Random): Presentation {
  const roll = random.next();
  if (roll < 0.5) return 'fields';
  if (roll < 0.7) return 'address-line';
  return roll < 0.9 ? 'locality-line' : 'both-lines';
}

const TOTAL_WEIGHT = VARIANTS.reduce((sum, variant) => sum + variant.weight, 0);

/**
 * Generates `n` dirty inputs. Deterministic: the same `n`, seed and country give the same list
 * (and the first k of a longer list equal a list of k). Throws `country-not-available` for a
 * country without reference data.
 */
export function generateDirtyInputs(n: number, opts: DirtyInputOptions = {}): DirtyInput[] {
  const random = createRandom(opts.seed ?? 1);
  const countries = referenceCountries();
  if (opts.country !== undefined && !countries.includes(opts.country)) {
    throw new CountryNotAvailableError(opts.country, countries);
  }
  const out: DirtyInput[] = [];
  while (out.length < n) {
    const country = opts.country ?? (random.next() < 0.8 ? 'DE' : 'AT');
    const index = countryIndex(country) as CountryIndex;
    let roll = random.next() * TOTAL_WEIGHT;
    const variant = VARIANTS.find((v) => (roll -= v.weight) < 0) ?? (VARIANTS[0] as (typeof VARIANTS)[number]);
    for (let attempt = 0; attempt < 500; attempt++) {
      const draft = variant.build(random, pickAddress(random, index));
      if (!draft) continue;
      const how = draft.presentation ?? presentation(random);
      out.push({
        input: present(country, draft.fields, how),
        intendedClass: draft.intendedClass,
        ...(draft.truth ? { truth: draft.truth } : {}),
        variant: how === 'fields' ? variant.name : `${variant.name}+${how}`,
      });
      break;
    }
  }
  return out;
}
