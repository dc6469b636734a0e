import { normaliseKey, normalisePostalCode, parseHouseNumber, splitAddressLine, splitLocalityLine } from './normalise.js';
import type { ParsedHouseNumber } from './normalise.js';
import type { AddressInput } from './types.js';

/**
 * An input address reduced to its four logical parts, whatever variant carried them
 * (street + houseNumber or addressLine; postalCode + locality or localityLine).
 */
export interface ParsedInput {
  country: string;
  /** Street as written (untrimmed when given as a field) and its key. */
  street: { raw: string; key: string };
  /** House number as written ('' when absent) and parsed. */
  house: { raw: string; parsed: ParsedHouseNumber | undefined };
  /** Postal code as written ('' when absent) and its digits. */
  postal: { raw: string; digits: string };
  locality: { raw: string; key: string };
  /** The input fields that carried the address, for `_meta`. */
  usesAddressLine: boolean;
  usesLocalityLine: boolean;
  addressLine?: string;
  localityLine?: string;
}

/** Splits and normalises an input; never throws. */
export function parseInput(input: AddressInput): ParsedInput {
  const usesAddressLine = input.addressLine !== undefined && input.addressLine.trim() !== '';
  const usesLocalityLine = input.localityLine !== undefined && input.localityLine.trim() !== '';
  const streetPart = usesAddressLine ? splitAddressLine(input.addressLine as string) : undefined;
  const localityPart = usesLocalityLine ? splitLocalityLine(input.localityLine as string) : undefined;
  const street = streetPart ? streetPart.street : (input.street ?? '');
  const house = streetPart ? (streetPart.houseNumber ?? '') : (input.houseNumber ?? '');
  const postal = localityPart ? (localityPart.postalCode ?? '') : (input.postalCode ?? '');
  const locality = localityPart ? (localityPart.locality ?? '') : (input.locality ?? '');
  return {
    country: input.country,
    street: { raw: street, key: normaliseKey(street) },
    house: { raw: house, parsed: house.trim() === '' ? undefined : parseHouseNumber(house) },
    postal: { raw: postal, digits: normalisePostalCode(postal) },
    locality: { raw: locality, key: normaliseKey(locality) },
    usesAddressLine,
    usesLocalityLine,
    ...(usesAddressLine ? { addressLine: input.addressLine } : {}),
    ...(usesLocalityLine ? { localityLine: input.localityLine } : {}),
  };
}
