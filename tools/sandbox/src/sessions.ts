import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** What a session token carries. */
export interface SessionClaims {
  accountId: string;
  /** Country the session was started for (autocomplete must use the same). */
  country: string;
  /** Expiry, epoch milliseconds. */
  expiresAt: number;
}

/** Prefix of every session token; API keys may not start with it. */
export const SESSION_TOKEN_PREFIX = 'dqs1.';
const PREFIX = SESSION_TOKEN_PREFIX;

/**
 * Stateless session tokens: `dqs1.<claims, base64url JSON>.<HMAC-SHA256, base64url>`. Anything not
 * issued verbatim by this sandbox fails the signature check and "cannot be decoded" (7.1).
 */
export class SessionTokens {
  readonly #secret = randomBytes(32);

  /** Issues a token for an account and country, valid for `lifetimeMs` from now. */
  issue(accountId: string, country: string, lifetimeMs: number, now = Date.now()): string {
    const claims = { a: accountId, c: country, x: Math.round(now + lifetimeMs), n: randomBytes(6).toString('base64url') };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${PREFIX}${payload}.${this.#sign(payload)}`;
  }

  /** True when the bearer value has the shape of a session token (an API key never starts with `dqs1.`). */
  looksLikeSession(token: string): boolean {
    return token.startsWith(PREFIX);
  }

  /** The claims of a token issued here, or null when it cannot be decoded (tampered, truncated, foreign). */
  decode(token: string): SessionClaims | null {
    if (!token.startsWith(PREFIX)) return null;
    const dot = token.indexOf('.', PREFIX.length);
    if (dot === -1) return null;
    const payload = token.slice(PREFIX.length, dot);
    // The signature's characters, not its decoded bytes: base64url decoding ignores trailing and
    // foreign characters (`<token>=`, `<token>!!` decode to the same bytes), and a token must be
    // used verbatim (contract 5, rule 4).
    const sig = Buffer.from(token.slice(dot + 1), 'latin1');
    const expected = Buffer.from(this.#sign(payload), 'latin1');
    if (sig.length !== expected.length || !timingSafeEqual(sig, expected)) return null;
    try {
      const c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { a?: unknown; c?: unknown; x?: unknown };
      if (typeof c.a !== 'string' || typeof c.c !== 'string' || typeof c.x !== 'number') return null;
      return { accountId: c.a, country: c.c, expiresAt: c.x };
    } catch {
      return null;
    }
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest().subarray(0, 18).toString('base64url');
  }
}
