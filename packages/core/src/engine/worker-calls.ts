import { ContractError } from '../errors/index.js';
import { AddressResultSchema, BatchResultSchema, CompanySuccessSchema, VatResultSchema } from '../schemas/index.js';
import type { Transport } from '../transport/index.js';
import type { CallOutcome, WorkerInit } from './messages.js';
import { addressOutcome, companyOutcome, vatOutcome } from './outcome.js';
import type { RequestFields } from './record-mapping.js';

/** One platform call of a worker: the outcome of a successful answer and the attempts it took. */
export type Caller = (
  fields: RequestFields,
  customerAddressId: string,
  signal: AbortSignal,
) => Promise<{ outcome: CallOutcome; attempts: number }>;

const PATHS = {
  batch: '/location/v1/validate/batch/sync',
  validate: '/location/v1/validate',
  company: '/companies/v2',
} as const;

/**
 * Builds the call of the engine's mode on `transport`. Errors are thrown as the transport raised
 * them (a `DqError`); the worker turns them into outcomes.
 */
export function createCaller(init: WorkerInit, transport: Transport): Caller {
  const { mode, policy } = init;
  if (mode === 'address') {
    const options = init.include && init.include.length > 0 ? { _options: { include: init.include } } : {};
    if (init.addressEndpoint === 'validate') {
      return async (fields, _id, signal) => {
        const res = await transport.request({
          endpoint: 'validate',
          method: 'POST',
          path: PATHS.validate,
          body: { ...fields, ...options },
          schema: AddressResultSchema,
          signal,
        });
        return { outcome: addressOutcome(res.data, res.requestId, policy), attempts: res.attempts };
      };
    }
    return async (fields, customerAddressId, signal) => {
      const res = await transport.request({
        endpoint: 'batch',
        method: 'POST',
        path: PATHS.batch,
        body: { ...fields, ...options, customerAddressId },
        schema: BatchResultSchema,
        signal,
      });
      if (res.data.customerAddressId !== customerAddressId) {
        // The echo is how batch results are matched to requests (docs/platform-contract.md); a wrong one is a contract break.
        throw new ContractError(
          `batch/sync answered for customerAddressId ${JSON.stringify(res.data.customerAddressId)} instead of ${JSON.stringify(customerAddressId)} [request id ${res.requestId ?? 'none'}]`,
          { status: res.status, requestId: res.requestId },
        );
      }
      return { outcome: addressOutcome(res.data, res.requestId, policy), attempts: res.attempts };
    };
  }

  const { minScore, limit, lang, includeDeleted } = init.company;
  const query = { searchMethod: mode, minScore, limit, lang, includeDeleted };
  if (mode === 'vat') {
    return async (fields, _id, signal) => {
      const res = await transport.request({
        endpoint: 'company',
        method: 'POST',
        baseUrl: init.realtimeUrl,
        path: PATHS.company,
        query: { searchMethod: 'vat' },
        body: fields,
        schema: VatResultSchema,
        signal,
      });
      return { outcome: vatOutcome(res.data.code, res.requestId), attempts: res.attempts };
    };
  }
  return async (fields, _id, signal) => {
    const res = await transport.request({
      endpoint: 'company',
      method: 'POST',
      baseUrl: init.realtimeUrl,
      path: PATHS.company,
      query,
      body: fields,
      schema: CompanySuccessSchema,
      signal,
    });
    const total = Number(res.headers['x-total-count']);
    const hits = Number.isInteger(total) && total >= 0 ? total : undefined;
    return { outcome: companyOutcome(res.data.companies, hits, res.requestId), attempts: res.attempts };
  };
}
