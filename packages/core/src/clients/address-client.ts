import {
  AutocompleteRequestSchema,
  AutocompleteResponseSchema,
  StartSessionRequestSchema,
  StartSessionResponseSchema,
  validateAddressRequest,
} from '../schemas/index.js';
import type { AddressRequest, AddressResult, AutocompleteRequest, AutocompleteResponse, BatchResult, StartSessionResponse } from '../schemas/index.js';
import { violationsFromZod } from '../schemas/index.js';
import { ADDRESS_PATHS, checkBatchEcho, postBatchSync, validateAddress } from './calls.js';
import type { Transport, TransportResponse } from '../transport/types.js';
import { callOptions, refuseInvalid } from './call-options.js';
import type { CallOptions } from './call-options.js';

export { ADDRESS_PATHS };

/** Options of {@link AddressClient.validate}. */
export interface ValidateOptions extends CallOptions {
  /**
   * `api-key` (default) or `session`: send the session token of the request's `country` instead
   * (contract 5: validate accepts either).
   */
  auth?: 'api-key' | 'session';
}

/**
 * Typed calls of the address API on `{base_url}`. Every request is checked locally first (rule
 * 2.1.1, country, include values) and refused with a `LocalValidationError` naming the field.
 */
export class AddressClient {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** POST /location/v1/validate: one address, for single look-ups (30 requests/s). */
  async validate(req: AddressRequest, opts: ValidateOptions = {}): Promise<TransportResponse<AddressResult>> {
    refuseInvalid('Address', validateAddressRequest(req));
    const useSession = opts.auth === 'session';
    if (useSession && req.country === undefined) {
      refuseInvalid('Address', [{ fieldName: 'country', message: 'is required to validate with a session token' }]);
    }
    const auth = useSession && req.country !== undefined ? { session: req.country } : 'api-key';
    return validateAddress(this.#transport, req, auth, opts.signal, opts.timeoutMs);
  }

  /**
   * POST /location/v1/validate/batch/sync: one address tagged with `customerAddressId`, the bulk
   * endpoint (100 requests/s, docs/platform-contract.md). The echoed id is checked against the one sent.
   */
  async batchSync(req: AddressRequest, customerAddressId: string, opts: CallOptions = {}): Promise<TransportResponse<BatchResult>> {
    const body = { ...req, customerAddressId };
    refuseInvalid('Address', validateAddressRequest(body, { batch: true }));
    return checkBatchEcho(await postBatchSync(this.#transport, body, opts.signal, opts.timeoutMs), customerAddressId);
  }

  /**
   * POST /location/v1/start-session: a new session token for `country`, always a fresh call. To
   * reuse and renew tokens, use autocomplete or `validate(…, { auth: 'session' })` instead.
   */
  async startSession(country: string, opts: CallOptions = {}): Promise<TransportResponse<StartSessionResponse>> {
    const parsed = StartSessionRequestSchema.safeParse({ country });
    refuseInvalid('Start-session request', parsed.success ? [] : violationsFromZod(parsed.error));
    const res = await this.#transport.request({
      endpoint: 'start-session',
      method: 'POST',
      path: ADDRESS_PATHS.startSession,
      body: { country },
      schema: StartSessionResponseSchema,
      ...callOptions(opts),
    });
    this.#transport.redactor.add(res.data._sessionToken);
    return res;
  }

  /**
   * POST /location/v1/autocomplete with the session token of `req.country` (started, reused and
   * renewed by the transport; contract 5.2: token country = request country).
   */
  async autocomplete(req: AutocompleteRequest, opts: CallOptions = {}): Promise<TransportResponse<AutocompleteResponse>> {
    const parsed = AutocompleteRequestSchema.safeParse(req);
    refuseInvalid('Autocomplete request', parsed.success ? [] : violationsFromZod(parsed.error));
    return this.#transport.request({
      endpoint: 'autocomplete',
      method: 'POST',
      path: ADDRESS_PATHS.autocomplete,
      body: req,
      schema: AutocompleteResponseSchema,
      auth: { session: req.country },
      ...callOptions(opts),
    });
  }
}
