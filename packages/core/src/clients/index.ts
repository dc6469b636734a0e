export { AddressClient, ADDRESS_PATHS } from './address-client.js';
export type { ValidateOptions } from './address-client.js';
export { CompanyClient, COMPANY_PATH } from './company-client.js';
export type { CompanyParams, CompanySearchResult, PagingOptions } from './company-client.js';
export { PhoneClient, PHONE_DESCRIBE_PATH } from './phone-client.js';
export type { CallOptions } from './call-options.js';
export { validateAddress, postBatchSync, checkBatchEcho, checkVat, searchCompanies, totalCount } from './calls.js';
