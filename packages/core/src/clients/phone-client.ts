import { PhoneDescribeSchema } from '../schemas/index.js';
import type { PhoneDescribe } from '../schemas/index.js';
import type { Transport, TransportResponse } from '../transport/types.js';
import { callOptions } from './call-options.js';
import type { CallOptions } from './call-options.js';

/** Path of the phone analysis description on `{realtime_url}` (contract 4.6). */
export const PHONE_DESCRIBE_PATH = '/rest/describe/phone_number_analysis/analyse_phone';

/** Typed calls of the real-time phone service; today only its request description (contract 4.6). */
export class PhoneClient {
  readonly #transport: Transport;
  readonly #baseUrl: string;

  /** `realtimeUrl` defaults to the transport's. */
  constructor(transport: Transport, options: { realtimeUrl?: string } = {}) {
    this.#transport = transport;
    this.#baseUrl = options.realtimeUrl ?? transport.realtimeUrl;
  }

  /** GET the machine-readable description of the phone analysis request (parameters, 2.5). */
  describe(opts: CallOptions = {}): Promise<TransportResponse<PhoneDescribe>> {
    return this.#transport.request({
      endpoint: 'phone',
      method: 'GET',
      baseUrl: this.#baseUrl,
      path: PHONE_DESCRIBE_PATH,
      schema: PhoneDescribeSchema,
      ...callOptions(opts),
    });
  }
}
