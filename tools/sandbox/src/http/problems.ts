/**
 * The address API's problem types (contract 7.1). Fragments are the kebab-case names decided in
 * docs/platform-contract.md; the two the contract shows (`no-auth-data`, `field-error`) keep their titles.
 */
export const PROBLEMS = {
  'field-error': { status: 400, title: 'Field Validation Error' },
  'no-auth-data': { status: 401, title: 'No authorization header present' },
  'api-key-invalid': { status: 401, title: 'API Key Invalid' },
  'origin-invalid': { status: 401, title: 'Origin Invalid' },
  'missing-session-token': { status: 401, title: 'Missing Session Token' },
  'invalid-session-token': { status: 401, title: 'Invalid Session Token' },
  'account-disabled': { status: 403, title: 'Account Disabled' },
  'service-disabled': { status: 403, title: 'Service Disabled' },
  'feature-disabled': { status: 403, title: 'Feature Disabled' },
  'quota-expired': { status: 403, title: 'Quota Expired' },
  'quota-exhausted': { status: 403, title: 'Quota Exhausted' },
  'expired-session-token': { status: 403, title: 'Expired Session Token' },
  'not-found': { status: 404, title: 'Not Found' },
  'method-not-allowed': { status: 405, title: 'Method Not Allowed' },
  // Not in 7.1: the contract states no body limit; the sandbox refuses bodies over 1 MiB.
  'payload-too-large': { status: 413, title: 'Payload Too Large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported Media Type' },
  // Not in 7.1: downloads (RFC 9110 Range) and the sandbox's own admin endpoints.
  'range-not-satisfiable': { status: 416, title: 'Range Not Satisfiable' },
  'loopback-only': { status: 403, title: 'Admin endpoints answer loopback clients only' },
  'too-many-requests': { status: 429, title: 'Too Many Requests' },
  'internal-error': { status: 500, title: 'Internal Error' },
  'country-not-available': { status: 500, title: 'Country not available' },
  // Not in 7.1: used only by injected faults that choose 502/503/504.
  'bad-gateway': { status: 502, title: 'Bad Gateway' },
  'service-unavailable': { status: 503, title: 'Service Unavailable' },
  'gateway-timeout': { status: 504, title: 'Gateway Timeout' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemFragment = keyof typeof PROBLEMS;

/** One entry of a 400's `violations`. */
export interface Violation {
  fieldName: string;
  message: string;
}

/** Problem fragment for a 5xx status chosen by fault injection. */
export function fragmentForStatus(status: number): ProblemFragment {
  switch (status) {
    case 429:
      return 'too-many-requests';
    case 502:
      return 'bad-gateway';
    case 503:
      return 'service-unavailable';
    case 504:
      return 'gateway-timeout';
    default:
      return 'internal-error';
  }
}

/** Reason phrases for the company envelope's `error` member (2.4). */
export const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
