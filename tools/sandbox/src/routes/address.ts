import type { SandboxContext } from '../context.js';
import { checkAddressRequest, checkAutocompleteRequest, checkCountry, isObject } from '../http/address-request.js';
import { authenticateAddress, type AddressCaller, type AddressEndpoint } from '../http/auth.js';
import { isJsonContentType, sendJson, sendProblem, type Exchange } from '../http/exchange.js';
import { applyFault, rateLimited, readJson } from '../http/guards.js';
import { fragmentForStatus, type Violation } from '../http/problems.js';

/** Paths of the address API (contract 4.1–4.3) and the stats key / fault group / limit of each. */
export const ADDRESS_ROUTES: Readonly<Record<string, AddressEndpoint>> = {
  '/location/v1/validate': 'validate',
  '/location/v1/validate/batch/sync': 'batch',
  '/location/v1/start-session': 'start-session',
  '/location/v1/autocomplete': 'autocomplete',
};

/**
 * One address-API request, in the order: 405 → injected fault → 401/403 → 429 → 415 → 413/400
 * (malformed JSON, field rules) → processing (500 country-not-available) → 200.
 */
export async function handleAddress(ctx: SandboxContext, ex: Exchange, endpoint: AddressEndpoint): Promise<void> {
  const docs = ctx.docsUrl;
  if (ex.req.method !== 'POST') {
    sendProblem(ex, docs, 'method-not-allowed', { headers: { Allow: 'POST' } });
    return;
  }
  if (await applyFault(ctx, ex, endpoint, (status, headers) => sendProblem(ex, docs, fragmentForStatus(status), headers && { headers }))) return;

  const caller = authenticateAddress(ctx, ex.req, endpoint);
  if (typeof caller === 'string') {
    sendProblem(ex, docs, caller);
    return;
  }
  const retryAfter = rateLimited(ctx, caller.account, endpoint);
  if (retryAfter !== null) {
    sendProblem(ex, docs, 'too-many-requests', { headers: { 'Retry-After': retryAfter } });
    return;
  }
  if (!isJsonContentType(ex.req.headers['content-type'])) {
    sendProblem(ex, docs, 'unsupported-media-type', { detail: 'Declare the body with "Content-Type: application/json".' });
    return;
  }
  const body = await readJson(ex);
  if (body === null) {
    sendProblem(ex, docs, 'payload-too-large', { detail: 'The request body exceeds 1 MiB.' });
    return;
  }
  if (!body.ok) {
    sendProblem(ex, docs, 'field-error', { violations: [{ fieldName: 'body', message: body.message }] });
    return;
  }
  switch (endpoint) {
    case 'validate':
    case 'batch':
      validate(ctx, ex, caller, endpoint, body.value);
      return;
    case 'start-session':
      startSession(ctx, ex, caller, body.value);
      return;
    case 'autocomplete':
      autocomplete(ctx, ex, caller, body.value);
      return;
  }
}

function validate(ctx: SandboxContext, ex: Exchange, caller: AddressCaller, endpoint: 'validate' | 'batch', body: unknown): void {
  const checked = checkAddressRequest(body);
  let customerAddressId: string | undefined;
  const violations = checked.ok ? [] : checked.violations;
  if (endpoint === 'batch' && isObject(body)) {
    const id = body['customerAddressId'];
    // docs/platform-contract.md: the id is how a client matches a batch result to its record, so it is required.
    if (typeof id === 'string' && id !== '') customerAddressId = id;
    else violations.push({ fieldName: 'customerAddressId', message: 'customerAddressId must be a non-empty string; it is echoed in the result.' });
  }
  if (checked.ok && caller.session !== undefined && checked.value.input.country !== caller.session.country)
    violations.push(sessionCountryViolation(caller.session.country, checked.value.input.country));
  if (!checked.ok || violations.length > 0) {
    sendProblem(ex, ctx.docsUrl, 'field-error', { violations });
    return;
  }
  let result: { resultClass: string; results: unknown[] };
  try {
    result = ctx.matcher.validate(checked.value.input, checked.value.include);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'country-not-available') {
      sendProblem(ex, ctx.docsUrl, 'country-not-available', { detail: `No reference data for country ${checked.value.input.country}.` });
      return;
    }
    throw err;
  }
  if (!ctx.accounts.bill(caller.account)) {
    sendProblem(ex, ctx.docsUrl, 'quota-exhausted');
    return;
  }
  sendJson(ex, 200, customerAddressId === undefined ? result : { customerAddressId, ...result });
}

function startSession(ctx: SandboxContext, ex: Exchange, caller: AddressCaller, body: unknown): void {
  const violations: Violation[] = [];
  if (!isObject(body)) violations.push({ fieldName: 'body', message: 'The request body must be a JSON object such as {"country":"DE"}.' });
  else checkCountry(body['country'], violations);
  if (violations.length > 0 || !isObject(body)) {
    sendProblem(ex, ctx.docsUrl, 'field-error', { violations });
    return;
  }
  const account = caller.account;
  const token = ctx.sessions.issue(account.config.id, body['country'] as string, account.config.sessionLifetimeSeconds * 1000);
  sendJson(ex, 200, { _sessionToken: token });
}

function autocomplete(ctx: SandboxContext, ex: Exchange, caller: AddressCaller, body: unknown): void {
  const checked = checkAutocompleteRequest(body);
  if (!checked.ok) {
    sendProblem(ex, ctx.docsUrl, 'field-error', { violations: checked.violations });
    return;
  }
  const sessionCountry = caller.session?.country;
  if (sessionCountry !== undefined && checked.value.request.country !== sessionCountry) {
    sendProblem(ex, ctx.docsUrl, 'field-error', { violations: [sessionCountryViolation(sessionCountry, checked.value.request.country)] });
    return;
  }
  let result: { results: unknown[] };
  try {
    result = ctx.matcher.autocomplete(checked.value.request, checked.value.include);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'country-not-available') {
      sendProblem(ex, ctx.docsUrl, 'country-not-available', { detail: `No reference data for country ${checked.value.request.country}.` });
      return;
    }
    throw err;
  }
  if (!ctx.accounts.bill(caller.account)) {
    sendProblem(ex, ctx.docsUrl, 'quota-exhausted');
    return;
  }
  sendJson(ex, 200, result);
}

/**
 * A session token serves only the country it was started for (contract 5 rule 2 for autocomplete;
 * docs/platform-contract.md for validate with a token). A per-request input error, so 400 on
 * `country` rather than a 401 that would make a client discard a token still good for its country.
 */
function sessionCountryViolation(sessionCountry: string, country: string): Violation {
  return {
    fieldName: 'country',
    message: `country must equal the country the session token was issued for (${sessionCountry}); start a new session for ${country}.`,
  };
}
