export { createCompanyService } from './company-service.js';
export { checkVatId, compactVatId, makeVatId, VAT_COUNTRIES, VAT_PREFIXES } from './vat/index.js';
export type { VatCheckResult, VatCountry } from './vat/index.js';
export type { MessageCode, Language } from './messages.js';
export type { CompanyHit, CompanyRecord, CompanyResponse, CompanyService, CompanyServiceOptions, SearchMethod, TrStatus } from './types.js';
