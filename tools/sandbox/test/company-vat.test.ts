import { describe, expect, it } from 'vitest';
import { checkVatId, createCompanyService, makeVatId, VAT_COUNTRIES } from '../src/company/index.js';

// Published example numbers (tax administrations' and python-stdnum's documentation).
const PUBLISHED_VALID: Readonly<Record<string, readonly string[]>> = {
  DE: ['DE136695976'],
  AT: ['ATU13585627'],
  FR: ['FR40303265045', 'FR23334175221', 'FRK7399859412', 'FR4Z123456782'],
  NL: ['NL004495445B01', 'NL002455799B11'],
  IT: ['IT00743110157'],
  ES: ['ESA13585625', 'ESB64717838', 'ES54362315K', 'ESX5253868R', 'ESM1234567L'],
  BE: ['BE0403019261', 'BE0428759497'],
};

/** Every ID that differs from `vatId` in exactly one digit after the country prefix. */
function singleDigitChanges(vatId: string): string[] {
  const changed: string[] = [];
  for (let i = 2; i < vatId.length; i++) {
    const digit = vatId[i] as string;
    if (!/[0-9]/.test(digit)) continue;
    for (let d = 0; d <= 9; d++) {
      if (String(d) !== digit) changed.push(vatId.slice(0, i) + String(d) + vatId.slice(i + 1));
    }
  }
  return changed;
}

describe('checkVatId', () => {
  it.each(Object.entries(PUBLISHED_VALID))('accepts the published valid %s numbers', (_country, ids) => {
    for (const id of ids) expect(checkVatId(id), id).toBe('VALID_VAT_ID');
  });

  // These algorithms catch every single-digit error. NL and the new French letter keys do not
  // by design (NL accepts either of two checks and the eleven-test leaves the B-suffix free;
  // the letter keys are a mod-11 check), so they get targeted changes below instead.
  const fullyChecked = Object.values(PUBLISHED_VALID)
    .flat()
    .filter((id) => !id.startsWith('NL') && !/^FR\d?[A-Z]/.test(id));

  it.each(fullyChecked)('rejects every single-digit change of %s', (id) => {
    const changes = singleDigitChanges(id);
    expect(changes.length).toBeGreaterThan(50);
    expect(changes.filter((changed) => checkVatId(changed) === 'VALID_VAT_ID')).toEqual([]);
  });

  it('rejects changed check digits of Dutch and new-style French numbers', () => {
    for (const id of ['NL004495446B01', 'NL004495455B01', 'NL002455799B12', 'NL002455798B11', 'FR4Z123456783', 'FRK7399859413']) {
      expect(checkVatId(id), id).toBe('INVALID_VAT_ID');
    }
  });

  it('accepts any B-suffix on a Dutch number that passes the eleven-test', () => {
    expect(checkVatId('NL004495445B02')).toBe('VALID_VAT_ID');
  });

  it('ignores spaces, dots, hyphens and case the way people write VAT IDs', () => {
    for (const id of ['DE 136 695 976', 'atu 1358 5627', 'FR 40-303-265-045', 'BE 0403.019.261', 'nl004495445b01']) {
      expect(checkVatId(id), id).toBe('VALID_VAT_ID');
    }
  });

  it('accepts the Spanish company check character as a digit or as its letter', () => {
    // B64717838: Luhn check 8; its letter form is 'H' (JABCDEFGHI).
    expect(checkVatId('ESB6471783H')).toBe('VALID_VAT_ID');
    expect(checkVatId('ESB6471783A')).toBe('INVALID_VAT_ID');
  });

  it('accepts the old nine-digit Belgian form and rejects a number starting with 2–9', () => {
    expect(checkVatId('BE403019261')).toBe('VALID_VAT_ID');
    // 2000000 mod 97 = 27, so 97 − 27 = 70 would be the check digits: valid arithmetic, wrong first digit.
    expect(checkVatId('BE2000000070')).toBe('INVALID_VAT_ID');
  });

  it('rejects wrong lengths and shapes as invalid, not as an unknown country', () => {
    for (const id of [
      'DE13669597',
      'DE1366959761',
      'DE036695976',
      'AT13585627',
      'NL004495445A01',
      'NL004495445B00',
      'IT00743110157X',
      'FRIO334175221',
      'ESO1234567L',
    ]) {
      expect(checkVatId(id), id).toBe('INVALID_VAT_ID');
    }
  });

  it('reports a prefix that is no EU VAT country as an unknown country', () => {
    for (const id of ['XX123456789', 'GB980780684', 'CHE116281710', 'GR094259216', '136695976', '']) expect(checkVatId(id), id).toBe('UNKNOWN_COUNTRY');
  });

  it('checks the other EU countries (and XI) by their own check digits: a valid ID passes, one digit changed fails', () => {
    const valid = ['PL5260250274', 'SE556703748501', 'CZ25123891', 'DK13585628', 'EL094259216', 'XI980780684', 'HU12892312', 'IE6388047V', 'FI20774740'];
    valid.push('LU26375245', 'MT11679112', 'PT501964843', 'RO18547290', 'SI50223054', 'SK2022749619', 'BG175074752', 'CY10259033P', 'EE100207415');
    valid.push('HR33392005961', 'LT119511515', 'LV40003521600');
    expect(new Set(valid.map((id) => id.slice(0, 2))).size).toBe(21);
    for (const id of valid) {
      expect(checkVatId(id), id).toBe('VALID_VAT_ID');
      const last = Number(id.match(/\d(?=\D*$)/)?.[0]);
      const changed = id.replace(/\d(?=\D*$)/, String((last + 1) % 10));
      expect(checkVatId(changed), changed).toBe('INVALID_VAT_ID');
    }
  });
});

describe('makeVatId', () => {
  it.each([...VAT_COUNTRIES])('makes valid, deterministic and distinct %s IDs', (country) => {
    const ids = Array.from({ length: 300 }, (_, n) => makeVatId(country, n * 7919));
    for (const id of ids) {
      expect(id.startsWith(country)).toBe(true);
      expect(checkVatId(id), id).toBe('VALID_VAT_ID');
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(makeVatId(country, 4711)).toBe(makeVatId(country, 4711));
  });
});

describe('searchMethod vat', () => {
  const service = createCompanyService({ size: 100 });
  const vat = (vatId: string) => service.handle(new URLSearchParams({ searchMethod: 'vat' }), { vatId }, '/companies/v2');

  it('answers 200 with VALID_VAT_ID for a valid ID and no X-Total-Count', () => {
    expect(vat('DE136695976')).toEqual({ status: 200, body: { status: 200, code: 'VALID_VAT_ID' } });
  });

  it('answers 200 with INVALID_VAT_ID for a wrong check digit or a malformed ID', () => {
    for (const id of ['DE136695978', 'DE12']) {
      expect(vat(id), id).toEqual({ status: 200, body: { status: 200, code: 'INVALID_VAT_ID' } });
    }
  });

  it('answers 400 for an unknown country prefix', () => {
    expect(vat('ZZ136695976').status).toBe(400);
  });

  it('answers 200 for a VAT ID of an EU country without a rule of its own (4.7 rule 3: vat always answers 200)', () => {
    expect(vat('PL 526-025-02-74')).toEqual({ status: 200, body: { status: 200, code: 'VALID_VAT_ID' } });
    expect(vat('PL5260250275')).toEqual({ status: 200, body: { status: 200, code: 'INVALID_VAT_ID' } });
  });
});
