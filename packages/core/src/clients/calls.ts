/**
 * The one implementation of each platform call the connectors make: path, endpoint, answer schema
 * and the checks of the answer. The engine's workers (`engine/worker-calls.ts`) call these with the
 * bodies they built; the typed clients (`AddressClient`, `CompanyClient`) check their input locally
 * first and then call these too. Positional `signal`/`timeoutMs` keep the engine's per-call path
 * free of option objects.
 */
import { ContractError } from '../errors/dq-error.js';
import { AddressResultSchema, BatchResultSchema, CompanySearchAnswerSchema, VatResultSchema } from '../schemas/index.js';
import type { AddressResult, BatchResult, CompanySearchAnswer, VatResult } from '../schemas/index.js';
import { START_SESSION_PATH } from '../transport/transport.js';
import type { AuthMode, QueryValue, Transport, TransportResponse } from '../transport/types.js';

/** Paths of the address API (docs/platform-contract.md). */
export const ADDRESS_PATHS = {
  validate: '/location/v1/validate',
  batchSync: '/location/v1/validate/batch/sync',
  startSession: START_SESSION_PATH,
  autocomplete: '/location/v1/autocomplete',
} as const;

/** Path of company validation on `{realtime_url}` (docs/platform-contract.md). */
export const COMPANY_PATH = '/companies/v2';

/** Query of a vat check. */
const VAT_QUERY = Object.freeze({ searchMethod: 'vat' });
/** The company service's body type (docs/platform-contract.md); frozen, so the transport builds the headers once. */
const COMPANY_HEADERS = Object.freeze({ 'content-type': 'application/json;charset=UTF-8' });

/** POST /location/v1/validate with `body` (already checked or built by the caller). */
export function validateAddress(
  transport: Transport,
  body: object,
  auth: AuthMode | undefined,
  signal?: AbortSignal,
  timeoutMs?: number,
): Promise<TransportResponse<AddressResult>> {
  return transport.request({
    endpoint: 'validate',
    method: 'POST',
    path: ADDRESS_PATHS.validate,
    body,
    schema: AddressResultSchema,
    auth,
    signal,
    timeoutMs,
  });
}

/**
 * POST /location/v1/validate/batch/sync with `body` (which carries `customerAddressId`). Check the
 * answer with {@link checkBatchEcho}: `checkBatchEcho(await postBatchSync(…), id)`. (Two steps, so
 * the engine's per-call path awaits one promise, not two.)
 */
export function postBatchSync(transport: Transport, body: object, signal?: AbortSignal, timeoutMs?: number): Promise<TransportResponse<BatchResult>> {
  return transport.request({
    endpoint: 'batch',
    method: 'POST',
    path: ADDRESS_PATHS.batchSync,
    body,
    schema: BatchResultSchema,
    signal,
    timeoutMs,
  });
}

/**
 * The echoed `customerAddressId` is how batch results are matched to requests
 * (docs/platform-contract.md): an answer for another id is a `ContractError`. Returns `res`.
 */
export function checkBatchEcho(res: TransportResponse<BatchResult>, customerAddressId: string): TransportResponse<BatchResult> {
  if (res.data.customerAddressId !== customerAddressId) {
    throw new ContractError(
      `batch/sync answered for customerAddressId ${JSON.stringify(res.data.customerAddressId)} instead of ${JSON.stringify(customerAddressId)} [request id ${res.requestId ?? 'none'}]`,
      { status: res.status, requestId: res.requestId },
    );
  }
  return res;
}

/** POST `{realtime_url}`/companies/v2?searchMethod=vat: a VAT ID's syntax check. */
export function checkVat(
  transport: Transport,
  baseUrl: string | undefined,
  body: object,
  query: Readonly<Record<string, QueryValue>> | undefined,
  signal?: AbortSignal,
  timeoutMs?: number,
): Promise<TransportResponse<VatResult>> {
  return transport.request({
    endpoint: 'company',
    method: 'POST',
    baseUrl,
    path: COMPANY_PATH,
    query: query ?? VAT_QUERY,
    body,
    headers: COMPANY_HEADERS,
    schema: VatResultSchema,
    signal,
    timeoutMs,
  });
}

/** POST `{realtime_url}`/companies/v2 with `query` (its `searchMethod` `company` or `tr`): one page of hits. */
export function searchCompanies(
  transport: Transport,
  baseUrl: string | undefined,
  body: object,
  query: Readonly<Record<string, QueryValue>>,
  signal?: AbortSignal,
  timeoutMs?: number,
): Promise<TransportResponse<CompanySearchAnswer>> {
  return transport.request({
    endpoint: 'company',
    method: 'POST',
    baseUrl,
    path: COMPANY_PATH,
    query,
    body,
    headers: COMPANY_HEADERS,
    schema: CompanySearchAnswerSchema,
    signal,
    timeoutMs,
  });
}

/** `X-Total-Count` of a company answer: the number of hits, or undefined when absent or not a count. */
export function totalCount(headers: Readonly<Record<string, string>>): number | undefined {
  const header = headers['x-total-count'];
  return header !== undefined && /^\s*\d+\s*$/.test(header) ? Number(header) : undefined;
}
