import { isDigits, luhnCheckDigit, luhnChecksum, mod11_10CheckDigit, mod97_10, modDigits } from './check-digits.js';

/** The VAT ID prefixes whose check-digit algorithm the sandbox knows. */
export const VAT_COUNTRIES = ['DE', 'AT', 'FR', 'NL', 'IT', 'ES', 'BE'] as const;
/** A VAT ID prefix the sandbox can check. */
export type VatCountry = (typeof VAT_COUNTRIES)[number];

/** One country's rule: `valid` gets the compacted ID without its two-letter prefix. */
interface NationalRule {
  valid(body: string): boolean;
  /** A valid body derived from `n` (any non-negative integer), the same for the same `n`. */
  make(n: number): string;
}

/** `n` folded into a zero-padded digit string of `width` digits. */
function digitsOf(n: number, width: number): string {
  const span = 10 ** width;
  return String(((Math.trunc(n) % span) + span) % span).padStart(width, '0');
}

// DE: 9 digits, the first not 0; the last is ISO 7064 MOD 11,10 over the first 8.
const de: NationalRule = {
  valid: (b) => b.length === 9 && isDigits(b) && b[0] !== '0' && mod11_10CheckDigit(b.slice(0, 8)) === Number(b[8]),
  make(n) {
    const base = String(10_000_000 + (Math.abs(Math.trunc(n)) % 90_000_000));
    return base + String(mod11_10CheckDigit(base));
  },
};

// AT: "U" + 8 digits; the check digit is (6 - Luhn sum of digits 1–7) mod 10 (BMF rule).
const atCheck = (seven: string): number => (16 - luhnChecksum(seven)) % 10;
const at: NationalRule = {
  valid: (b) => b.length === 9 && b[0] === 'U' && isDigits(b.slice(1)) && atCheck(b.slice(1, 8)) === Number(b[8]),
  make(n) {
    const seven = digitsOf(n + 1_000_000, 7);
    return `U${seven}${atCheck(seven)}`;
  },
};

// FR: a 2-character key + SIREN (9 digits, Luhn; Monaco's numbers start 000 and skip Luhn).
// Numeric key = (SIREN·100 + 12) mod 97; the newer alphanumeric keys follow the DGFiP formula.
const FR_ALPHABET = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZ';
const fr: NationalRule = {
  valid(b) {
    if (b.length !== 11) return false;
    const key = b.slice(0, 2);
    const siren = b.slice(2);
    if (!isDigits(siren) || ![...key].every((c) => FR_ALPHABET.includes(c))) return false;
    if (!siren.startsWith('000') && luhnChecksum(siren) !== 0) return false;
    if (isDigits(key)) return Number(key) === modDigits(`${siren}12`, 97);
    const a = FR_ALPHABET.indexOf(key[0] ?? '');
    const c = FR_ALPHABET.indexOf(key[1] ?? '');
    const check = isDigits(key[0] ?? '') ? a * 24 + c - 10 : a * 34 + c - 100;
    return (modDigits(siren, 11) + 1 + Math.floor(check / 11)) % 11 === check % 11;
  },
  make(n) {
    const eight = String(30_000_000 + (Math.abs(Math.trunc(n)) % 70_000_000));
    const siren = eight + String(luhnCheckDigit(eight));
    return String(modDigits(`${siren}12`, 97)).padStart(2, '0') + siren;
  },
};

// NL: 9 digits + "B" + 2 digits. Either the 9 digits pass the RSIN/BSN eleven-test, or (sole
// proprietors' numbers since 2020) "NL" + the whole ID passes ISO 7064 MOD 97-10.
const elevenTest = (nine: string): boolean => {
  let sum = 0;
  for (let i = 0; i < 8; i++) sum += (9 - i) * (nine.charCodeAt(i) - 48);
  return (sum - (nine.charCodeAt(8) - 48)) % 11 === 0;
};
const nl: NationalRule = {
  valid(b) {
    if (b.length !== 12 || b[9] !== 'B') return false;
    const nine = b.slice(0, 9);
    const suffix = b.slice(10);
    if (!isDigits(nine) || !isDigits(suffix) || Number(nine) === 0 || Number(suffix) === 0) return false;
    return elevenTest(nine) || mod97_10(`NL${b}`) === 1;
  },
  make(n) {
    // About one base in eleven has check value 10 and no valid digit; step on deterministically.
    for (let k = Math.abs(Math.trunc(n)); ; k++) {
      const eight = digitsOf(k + 10_000_000, 8);
      let sum = 0;
      for (let i = 0; i < 8; i++) sum += (9 - i) * (eight.charCodeAt(i) - 48);
      const check = sum % 11;
      if (check < 10) return `${eight}${check}B01`;
    }
  },
};

// IT: 11 digits: company number (7, not all 0), office code (001–100, 120, 121, 888, 999), Luhn.
const itOffice = (code: string): boolean => (code >= '001' && code <= '100') || ['120', '121', '888', '999'].includes(code);
const it: NationalRule = {
  valid: (b) => b.length === 11 && isDigits(b) && Number(b.slice(0, 7)) !== 0 && itOffice(b.slice(7, 10)) && luhnChecksum(b) === 0,
  make(n) {
    const k = Math.abs(Math.trunc(n));
    const ten = digitsOf(k + 1, 7) + String((k % 100) + 1).padStart(3, '0');
    return ten + String(luhnCheckDigit(ten));
  },
};

// ES: NIF. DNI = 8 digits + letter (number mod 23); NIE = X/Y/Z (as 0/1/2) + 7 digits + letter;
// K/L/M + 7 digits + DNI letter; CIF = entity letter + 7 digits + Luhn digit or its letter form.
const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';
const CIF_LETTERS = 'JABCDEFGHI';
const dniLetter = (digits: string): string => DNI_LETTERS[modDigits(digits, 23)] ?? '';
const es: NationalRule = {
  valid(b) {
    if (b.length !== 9 || !isDigits(b.slice(1, 8))) return false;
    const first = b[0] ?? '';
    const last = b[8] ?? '';
    const seven = b.slice(1, 8);
    if (isDigits(first)) return dniLetter(b.slice(0, 8)) === last;
    if ('XYZ'.includes(first)) return dniLetter(String('XYZ'.indexOf(first)) + seven) === last;
    if ('KLM'.includes(first)) return dniLetter(seven) === last;
    if ('ABCDEFGHJNPQRSUVW'.includes(first)) {
      const check = luhnCheckDigit(seven);
      return last === String(check) || last === CIF_LETTERS[check];
    }
    return false;
  },
  make(n) {
    const k = Math.abs(Math.trunc(n));
    const seven = digitsOf(k + 1_000_000, 7);
    const check = luhnCheckDigit(seven);
    // Alternate the forms so callers exercise each: company (digit), public body (letter), DNI.
    if (k % 3 === 0) return `B${seven}${check}`;
    if (k % 3 === 1) return `Q${seven}${CIF_LETTERS[check] ?? ''}`;
    const eight = `1${seven}`;
    return eight + dniLetter(eight);
  },
};

// BE: 10 digits starting 0 or 1 (the pre-2007 9-digit form gets a leading 0);
// the last two digits are 97 - (first eight mod 97).
const be: NationalRule = {
  valid(raw) {
    const b = raw.length === 9 ? `0${raw}` : raw;
    if (b.length !== 10 || !isDigits(b) || (b[0] !== '0' && b[0] !== '1')) return false;
    return 97 - modDigits(b.slice(0, 8), 97) === Number(b.slice(8));
  },
  make(n) {
    const eight = `0${digitsOf(Math.abs(Math.trunc(n)) + 2_000_000, 7)}`;
    return eight + String(97 - modDigits(eight, 97)).padStart(2, '0');
  },
};

/** The rule per supported prefix. */
export const NATIONAL_RULES: Readonly<Record<VatCountry, NationalRule>> = {
  DE: de,
  AT: at,
  FR: fr,
  NL: nl,
  IT: it,
  ES: es,
  BE: be,
};
