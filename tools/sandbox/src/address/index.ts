export { createAddressMatcher } from './matcher.js';
export type { AddressMatcherOptions } from './matcher.js';
export { generateDirtyInputs } from './dirty-inputs.js';
export type { DirtyInput, DirtyInputOptions } from './dirty-inputs.js';
export { CountryNotAvailableError } from './errors.js';
export type { AddressEngineErrorCode } from './errors.js';
export { AUTOCOMPLETE_LIMIT } from './autocomplete.js';
export type {
  AddressInput,
  AddressMatcher,
  AutocompleteRequest,
  Candidate,
  CandidateMeta,
  CoordinatePrecision,
  FieldRelevance,
  FieldStatus,
  HouseNumberRange,
  MatchResult,
  ResultClass,
} from './types.js';
