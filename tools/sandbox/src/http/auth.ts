import type { IncomingMessage } from 'node:http';
import { originAllowed, type Account } from '../accounts.js';
import type { Feature, Service } from '../config.js';
import type { SandboxContext } from '../context.js';
import type { SessionClaims } from '../sessions.js';
import type { ProblemFragment } from './problems.js';

/** The address endpoints, as far as authentication is concerned. */
export type AddressEndpoint = 'validate' | 'batch' | 'start-session' | 'autocomplete';

/** Who is calling an address endpoint, once authenticated. */
export interface AddressCaller {
  account: Account;
  /** Present when the call carried a session token. */
  session?: SessionClaims;
}

/** The value of `Authorization: Bearer <value>`, or null when the header is absent or not Bearer. */
export function bearerOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (h === undefined || h.length < 8 || h.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  const v = h.slice(7).trim();
  return v === '' || v.includes(' ') ? null : v;
}

const RULES: Readonly<Record<AddressEndpoint, { feature: Feature; billable: boolean }>> = {
  validate: { feature: 'validate', billable: true },
  batch: { feature: 'batch', billable: true },
  'start-session': { feature: 'sessions', billable: false },
  autocomplete: { feature: 'autocomplete', billable: true },
};

function serviceOf(endpoint: AddressEndpoint, account: Account): Service {
  if (endpoint === 'autocomplete') return 'autocomplete';
  // Sessions serve autocomplete and validate alike: either product lets an account start one.
  if (endpoint === 'start-session' && account.config.services.includes('autocomplete')) return 'autocomplete';
  return 'address';
}

/**
 * Authenticates an address-API call per contract 5 and 7.1: API key for validate, batch and
 * start-session, session token for autocomplete and (alternatively) validate; Origin against the
 * whitelist when sent; then the account's 403 rows. Returns the caller or the problem to answer.
 */
export function authenticateAddress(ctx: SandboxContext, req: IncomingMessage, endpoint: AddressEndpoint): AddressCaller | ProblemFragment {
  const token = bearerOf(req);
  if (token === null) return 'no-auth-data';
  const sessionShaped = ctx.sessions.looksLikeSession(token);
  let caller: AddressCaller;
  if (endpoint === 'autocomplete' || (endpoint === 'validate' && sessionShaped)) {
    if (!sessionShaped) return 'missing-session-token';
    const claims = ctx.sessions.decode(token);
    const account = claims === null ? undefined : ctx.accounts.byId(claims.accountId);
    if (claims === null || account === undefined) return 'invalid-session-token';
    caller = { account, session: claims };
  } else {
    const account = ctx.accounts.byKey(token);
    if (account === undefined) return 'api-key-invalid';
    caller = { account };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !originAllowed(caller.account, origin)) return 'origin-invalid';
  const rule = RULES[endpoint];
  const refusal = ctx.accounts.refusal(caller.account, serviceOf(endpoint, caller.account), rule.feature, rule.billable);
  // Contract 7.1's own example of Feature Disabled: autocomplete on a validation-only plan (one with
  // the address product but not autocomplete). Without the address product either, the service is off.
  if (refusal === 'service-disabled' && endpoint === 'autocomplete' && caller.account.config.services.includes('address')) return 'feature-disabled';
  if (refusal !== null) return refusal;
  if (caller.session !== undefined && caller.session.expiresAt <= Date.now()) return 'expired-session-token';
  return caller;
}

/** Why a real-time call (company, phone) is refused: 401 or 403 with a message for the 2.4 envelope. */
export interface RealtimeRefusal {
  status: 401 | 403;
  message: string;
}

/**
 * The API key of a real-time call: `Authorization: Bearer <key>`, `X-Auth-Token: <key>`, or HTTP
 * Basic with the key as password (docs/platform-contract.md). Null when none was sent.
 */
export function realtimeKeyOf(req: IncomingMessage): string | null {
  const bearer = bearerOf(req);
  if (bearer !== null) return bearer;
  const x = req.headers['x-auth-token'];
  if (typeof x === 'string' && x.trim() !== '') return x.trim();
  const h = req.headers.authorization;
  if (h !== undefined && h.slice(0, 6).toLowerCase() === 'basic ') {
    const decoded = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon !== -1 && colon < decoded.length - 1) return decoded.slice(colon + 1);
  }
  return null;
}

const REFUSAL_MESSAGES: Readonly<Record<string, string>> = {
  'account-disabled': 'The account is disabled; contact the platform to enable it.',
  'service-disabled': 'This service is not enabled for the account; the plan does not include it.',
  'feature-disabled': 'This feature is disabled in the account.',
  'quota-expired': 'The prepaid plan period has passed; renew the plan.',
  'quota-exhausted': 'The maximum number of requests of the prepaid plan has been reached.',
};

/** Message for a 403 of an account refusal, for the 2.4 envelope and download problems. */
export function refusalMessage(refusal: string): string {
  return REFUSAL_MESSAGES[refusal] ?? 'The account may not use this service.';
}

/** Authenticates a company or phone call; returns the account or the 401/403 to answer. */
export function authenticateRealtime(ctx: SandboxContext, req: IncomingMessage, service: Service, billable: boolean): { account: Account } | RealtimeRefusal {
  const key = realtimeKeyOf(req);
  if (key === null) return { status: 401, message: 'Authorization missing: send "Authorization: Bearer <API key>" or "X-Auth-Token: <API key>".' };
  const account = ctx.accounts.byKey(key);
  if (account === undefined) return { status: 401, message: 'Authorization invalid: the API key is not known.' };
  const refusal = ctx.accounts.refusal(account, service, null, billable);
  if (refusal !== null) return { status: 403, message: refusalMessage(refusal) };
  return { account };
}
