export { MODES, RESULT_CLASSES, RECORD_STATUSES, POLICY_STATUSES, ADDRESS_ENDPOINTS } from './vocabularies.js';
export type { Mode, ResultClass, RecordStatus, PolicyStatus, AddressEndpoint } from './vocabularies.js';
export { ViolationSchema, violationsFromZod, checkWith } from './violations.js';
export type { Violation, Checked } from './violations.js';
export { COUNTRY_CODES, isCountryCode } from './countries.js';
export { CountryCodeSchema } from './fields.js';
export {
  ADDRESS_INCLUDE_VALUES,
  ResultClassSchema,
  COORDINATE_PRECISIONS,
  ADDRESS_TYPES,
  AddressFieldsSchema,
  AddressRequestSchema,
  BatchRequestSchema,
  HouseNumberRangeSchema,
  CoordinatesSchema,
  CandidateMetaSchema,
  CandidateSchema,
  AddressResultSchema,
  BatchResultSchema,
  StartSessionRequestSchema,
  StartSessionResponseSchema,
  AutocompleteRequestSchema,
  AutocompleteResponseSchema,
  localityIdentificationViolation,
  validateAddressRequest,
} from './address.js';
export type {
  AddressInclude,
  AddressRequest,
  BatchRequest,
  HouseNumberRange,
  Candidate,
  AddressCandidate,
  AddressResult,
  BatchResult,
  StartSessionRequest,
  StartSessionResponse,
  AutocompleteRequest,
  AutocompleteResponse,
} from './address.js';
export { ProblemSchema } from './problem.js';
export type { ProblemBody } from './problem.js';
export {
  COMPANY_SEARCH_METHODS,
  COMPANY_LANGUAGES,
  COMPANY_QUERY_DEFAULTS,
  CompanyQuerySchema,
  CompanySearchBodySchema,
  TrSearchBodySchema,
  VatCheckBodySchema,
  COMPANY_BODY_SCHEMAS,
  CompanyRecordSchema,
  CompanySuccessSchema,
  CompanySearchAnswerSchema,
  VatResultSchema,
  CompanyErrorBodySchema,
  validateCompanyQuery,
  validateCompanyBody,
} from './company.js';
export type {
  CompanySearchMethod,
  CompanyQuery,
  CompanySearchBody,
  TrSearchBody,
  VatCheckBody,
  CompanyBodies,
  CompanyRecord,
  CompanySuccess,
  CompanySearchAnswer,
  VatResult,
  CompanyErrorBody,
} from './company.js';
export { PhoneParameterSchema, PHONE_PARAMETER_TYPES, PhoneDescribeSchema } from './phone.js';
export type { PhoneParameter, PhoneDescribe } from './phone.js';
export {
  SOFTWARE_PRODUCTS,
  SOFTWARE_PLATFORMS,
  SOFTWARE_ARTIFACTS,
  PLATFORMLESS_ARTIFACTS,
  DATA_PRODUCTS,
  DATA_RELEASES,
  INT_REGIONS,
  REFDATA_INSTALLERS,
  VERSION_FILE_PATH,
  CHECKSUM_SUFFIX,
  validateSoftwarePath,
  validateDataPath,
  softwarePath,
  dataPath,
  installerPath,
  parseDownloadPath,
  validateDownloadPath,
} from './download.js';
export type { SoftwarePathParts, DataPathParts, DownloadTarget } from './download.js';
