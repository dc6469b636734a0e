import { referenceData } from './reference-data.js';
import type { RefStreet, RefTown } from './reference-data.js';

/** Look-up tables over one country's reference data. */
export interface CountryIndex {
  country: string;
  towns: readonly RefTown[];
  townByPostalCode: ReadonlyMap<string, RefTown>;
  /** Town key and alias keys → towns; `alias` tells whether the key was an alias. */
  townsByKey: ReadonlyMap<string, { town: RefTown; alias: boolean }[]>;
  /** Every street of the country, for autocomplete. */
  streets: readonly RefStreet[];
}

function buildIndex(country: string, towns: readonly RefTown[]): CountryIndex {
  const townByPostalCode = new Map<string, RefTown>();
  const townsByKey = new Map<string, { town: RefTown; alias: boolean }[]>();
  const add = (key: string, town: RefTown, alias: boolean): void => {
    const list = townsByKey.get(key) ?? [];
    if (!list.some((entry) => entry.town === town)) list.push({ town, alias });
    townsByKey.set(key, list);
  };
  for (const town of towns) {
    for (const code of town.postalCodes) {
      const owner = townByPostalCode.get(code);
      if (owner && owner !== town) {
        throw new Error(`reference data: postal code ${code} belongs to ${owner.name} and ${town.name}`);
      }
      townByPostalCode.set(code, town);
    }
    add(town.key, town, false);
    for (const key of town.aliasKeys) add(key, town, true);
  }
  return { country, towns, townByPostalCode, townsByKey, streets: towns.flatMap((town) => town.streets) };
}

const indexes = new Map<string, CountryIndex>();

/** The index of a country with reference data, built once per process; undefined otherwise. */
export function countryIndex(country: string): CountryIndex | undefined {
  const known = indexes.get(country);
  if (known) return known;
  const towns = referenceData().townsByCountry.get(country);
  if (!towns) return undefined;
  const built = buildIndex(country, towns);
  indexes.set(country, built);
  return built;
}

/** Countries with reference data. */
export function referenceCountries(): readonly string[] {
  return referenceData().countries;
}
