/**
 * Check-digit primitives shared by the national VAT ID algorithms.
 * All functions take strings of ASCII digits that the caller has already checked.
 */

/** Luhn checksum over a digit string; 0 means the string (check digit included) is valid. */
export function luhnChecksum(digits: string): number {
  let sum = 0;
  const parity = digits.length % 2;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(i) - 48;
    if (i % 2 === parity) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10;
}

/** The Luhn check digit to append to `digits`. */
export function luhnCheckDigit(digits: string): number {
  return (10 - luhnChecksum(`${digits}0`)) % 10;
}

/** ISO 7064 MOD 11,10 check digit for `digits` (used by DE). */
export function mod11_10CheckDigit(digits: string): number {
  let product = 10;
  for (let i = 0; i < digits.length; i++) {
    let sum = (digits.charCodeAt(i) - 48 + product) % 10;
    if (sum === 0) sum = 10;
    product = (2 * sum) % 11;
  }
  return (11 - product) % 10;
}

/**
 * ISO 7064 MOD 97-10 remainder of an alphanumeric string, letters counting A=10 … Z=35
 * (as in IBAN). A valid string has remainder 1. Computed piecewise so no big integers are needed.
 */
export function mod97_10(text: string): number {
  let rest = 0;
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    rest = value >= 10 ? (rest * 100 + value) % 97 : (rest * 10 + value) % 97;
  }
  return rest;
}

/** Remainder of a decimal digit string modulo `m` without precision loss. */
export function modDigits(digits: string, m: number): number {
  let rest = 0;
  for (let i = 0; i < digits.length; i++) rest = (rest * 10 + digits.charCodeAt(i) - 48) % m;
  return rest;
}

/** True when `text` is non-empty and consists of ASCII digits only. */
export function isDigits(text: string): boolean {
  return /^[0-9]+$/.test(text);
}
