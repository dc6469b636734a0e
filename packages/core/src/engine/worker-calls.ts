import { checkBatchEcho, checkVat, searchCompanies, totalCount, postBatchSync, validateAddress } from '../clients/calls.js';
import { DqError, LOCAL_CODES, PlatformError } from '../errors/index.js';
import { shownUrl } from '../log/redact-url.js';
import type { Transport } from '../transport/index.js';
import type { CallOutcome, WorkerInit } from './messages.js';
import { addressOutcome, companyOutcome, vatOutcome } from './outcome.js';
import type { RequestFields } from './record-mapping.js';

/** One platform call of a worker: the outcome of a successful answer and the attempts it took. */
export type Caller = (fields: RequestFields, customerAddressId: string, signal: AbortSignal) => Promise<{ outcome: CallOutcome; attempts: number }>;

/**
 * Builds the call of the engine's mode on `transport`, on the one implementation of each platform
 * call (`clients/calls.ts`). Errors are thrown as the transport raised them (a `DqError`); the
 * worker turns them into outcomes.
 */
export function createCaller(init: WorkerInit, transport: Transport): Caller {
  const call = modeCaller(init, transport);
  const address = init.mode === 'address';
  const flag = address ? 'the base URL (--base-url, env DQ_BASE_URL)' : 'the company service URL (--realtime-url, env DQ_REALTIME_URL, default the base URL)';
  const base = shownUrl(address ? init.baseUrl : (init.realtimeUrl ?? init.baseUrl), 'the configured URL');
  return async (fields, customerAddressId, signal) => {
    try {
      return await call(fields, customerAddressId, signal);
    } catch (e) {
      throw e instanceof PlatformError && (e.status === 404 || e.status === 405) ? urlUnknown(e, base, flag) : e;
    }
  };
}

/**
 * A 404 (or 405) answer to a platform call: the contract's endpoints are fixed paths, so it is never
 * about the record but about the URL the call went to (a wrong host or path prefix, a proxy that
 * routes elsewhere). Every call would get the same answer: the run stops (exit 2) instead of
 * marking each record `unavailable` and ending as if the platform were down.
 */
function urlUnknown(e: PlatformError, base: string, flag: string): DqError {
  return new DqError(
    `the platform has no endpoint under ${base}, ${flag} (HTTP ${e.status} ${e.title ?? ''}, request id ${e.requestId ?? 'none'}); no record was marked`,
    {
      code: LOCAL_CODES.platformUrlUnknown,
      retriable: false,
      scope: 'run',
      status: e.status,
      requestId: e.requestId,
      cause: e,
    },
  );
}

function modeCaller(init: WorkerInit, transport: Transport): Caller {
  const { mode, policy } = init;
  if (mode === 'address') {
    const options = init.include && init.include.length > 0 ? { _options: { include: init.include } } : {};
    if (init.addressEndpoint === 'validate') {
      return async (fields, _id, signal) => {
        const res = await validateAddress(transport, { ...fields, ...options }, undefined, signal);
        return { outcome: addressOutcome(res.data, res.requestId, policy), attempts: res.attempts };
      };
    }
    return async (fields, customerAddressId, signal) => {
      const res = checkBatchEcho(await postBatchSync(transport, { ...fields, ...options, customerAddressId }, signal), customerAddressId);
      return { outcome: addressOutcome(res.data, res.requestId, policy), attempts: res.attempts };
    };
  }

  const baseUrl = init.realtimeUrl;
  if (mode === 'vat') {
    return async (fields, _id, signal) => {
      const res = await checkVat(transport, baseUrl, fields, undefined, signal);
      return { outcome: vatOutcome(res.data.code, res.requestId), attempts: res.attempts };
    };
  }
  const { minScore, limit, lang, includeDeleted } = init.company;
  const query = { searchMethod: mode, minScore, limit, lang, includeDeleted };
  return async (fields, _id, signal) => {
    const res = await searchCompanies(transport, baseUrl, fields, query, signal);
    return { outcome: companyOutcome(res.data.companies, totalCount(res.headers), res.requestId), attempts: res.attempts };
  };
}
