import { autocompleteAddresses } from './autocomplete.js';
import { countryIndex, referenceCountries } from './country-index.js';
import type { CountryIndex } from './country-index.js';
import { CountryNotAvailableError } from './errors.js';
import type { AddressMatcher } from './types.js';
import { validateAddress } from './validate.js';

const NO_INCLUDE: ReadonlySet<string> = new Set();

/** Options of {@link createAddressMatcher}. */
export interface AddressMatcherOptions {
  /**
   * Accepted for symmetry with the sandbox's `--seed`, which drives fault injection. It does not
   * change the reference data: that is fixed, so inputs from `generateDirtyInputs` keep their
   * known truth against every sandbox.
   */
  seed?: number;
}

/**
 * Creates the address matching engine over the sandbox's reference data (DE and AT). The data
 * and its indexes are built on first use, once per process (about 20 ms), and shared.
 */
export function createAddressMatcher(_opts: AddressMatcherOptions = {}): AddressMatcher {
  const countries = referenceCountries();
  const indexFor = (country: string): CountryIndex => {
    const index = countryIndex(country);
    if (!index) throw new CountryNotAvailableError(country, countries);
    return index;
  };
  for (const country of countries) indexFor(country);
  return {
    countries,
    validate: (input, include) => validateAddress(indexFor(input.country), input, include),
    autocomplete: (req, include = NO_INCLUDE) => autocompleteAddresses(indexFor(req.country), req, include),
  };
}
