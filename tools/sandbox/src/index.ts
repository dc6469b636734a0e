export { startSandbox } from './server.js';
export type { Sandbox, SandboxOptions } from './server.js';
export {
  CONTRACT_RATE_LIMITS,
  DEFAULT_API_KEY,
  FAULT_GROUPS,
  FEATURES,
  RATE_LIMITED,
  SERVICES,
  defaultConfig,
  loadConfigFile,
  parseConfig,
  sandboxConfigSchema,
} from './config.js';
export type {
  AccountConfig,
  FaultGroup,
  FaultSpec,
  FaultSpecInput,
  FaultsConfig,
  FaultsInput,
  Feature,
  RateLimitedEndpoint,
  ResolvedConfig,
  SandboxConfig,
  Service,
} from './config.js';
export { SandboxError } from './errors.js';
export { mulberry32 } from './prng.js';
export type { SandboxErrorCode } from './errors.js';
export { QUOTA_WARNING_SHARE } from './accounts.js';
export type { SandboxLogEvent, SandboxLogger } from './accounts.js';
export { ENDPOINTS } from './stats.js';
export type { EndpointKey, SandboxStats } from './stats.js';
export { PROBLEMS } from './http/problems.js';
export type { ProblemFragment, Violation } from './http/problems.js';
export { PHONE_ANALYSE_PATH, PHONE_DESCRIBE_PATH, phoneDescribe } from './phone/describe.js';
export { analysePhone, parsePhoneQuery } from './phone/analyse.js';
export type { PhoneQuery } from './phone/analyse.js';
export { createAddressMatcher, generateDirtyInputs, CountryNotAvailableError, AUTOCOMPLETE_LIMIT } from './address/index.js';
export type {
  AddressEngineErrorCode,
  AddressInput,
  AddressMatcher,
  AddressMatcherOptions,
  AutocompleteRequest,
  Candidate,
  CandidateMeta,
  CoordinatePrecision,
  DirtyInput,
  DirtyInputOptions,
  FieldRelevance,
  FieldStatus,
  HouseNumberRange,
  MatchResult,
  ResultClass,
} from './address/index.js';
export { createCompanyService, checkVatId, compactVatId, makeVatId, VAT_COUNTRIES, VAT_PREFIXES } from './company/index.js';
export type {
  CompanyHit,
  CompanyRecord,
  CompanyResponse,
  CompanyService,
  CompanyServiceOptions,
  Language,
  MessageCode,
  SearchMethod,
  TrStatus,
  VatCheckResult,
  VatCountry,
} from './company/index.js';
export { createDownloadStore, dataArtifacts, DATA_COUNTRIES, INSTALLERS, INT_REGIONS, SOFTWARE_VERSIONS } from './download/index.js';
export type { DownloadFile, DownloadNotFound, DownloadStore, DownloadStoreOptions } from './download/index.js';
export { makeSampleCsv, SAMPLE_COLUMNS, SAMPLE_MAP } from './sample-csv.js';
