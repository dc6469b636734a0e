// The hand-written redactor core had before pino (kept as the benchmark's reference only).
/** Text that replaces a secret in logs and error messages. */
export const REDACTED = '[redacted]';

/** Removes credentials from text and structured values before they are logged or shown. */
export interface Redactor {
  /** Registers a secret (API key, session token, password) to be replaced wherever it appears. */
  add(secret: string | undefined): void;
  /** `text` with every registered secret and every credential-shaped substring replaced. */
  redact(text: string): string;
  /** Deep copy of `value` with secret-named keys' values and secrets inside strings replaced. */
  redactValue(value: unknown): unknown;
}

// Secrets shorter than this are not registered: replacing "a" everywhere would garble the log and
// protect nothing.
const MIN_SECRET_LENGTH = 4;
// Session tokens are renewed every few minutes; keep the newest ones, a stale token is worthless.
const MAX_SECRETS = 2048;

const PATTERNS: ReadonlyArray<[RegExp, string]> = [
  [/\b(Bearer|Basic)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`],
  [/\b(x-auth-token|authorization)(["']?\s*[:=]\s*["']?)(?!Bearer\b|Basic\b)[^\s"',;}]+/gi, `$1$2${REDACTED}`],
  [/\b(api[-_]?key|password|passwd|pwd|secret|session[-_]?token|_sessionToken)(["']?\s*[:=]\s*["']?)[^\s"',;&}]+/gi, `$1$2${REDACTED}`],
  // scheme://user:password@host (postgres URLs and the like)
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${REDACTED}@`],
];

const SECRET_KEY = /^(authorization|x-auth-token|api[-_]?key|password|passwd|pwd|secret|token|session[-_]?token|_sessionToken|cookie)$/i;

/**
 * Creates a redactor. Registered secrets are replaced literally; on top of that, `Bearer …`,
 * `X-Auth-Token: …`, `apiKey=…`, `password=…` and URL passwords are replaced by pattern.
 */
export function createRedactor(secrets: Iterable<string> = []): Redactor {
  const known = new Set<string>();
  let sorted: string[] = [];

  const add = (secret: string | undefined): void => {
    if (secret === undefined || secret.length < MIN_SECRET_LENGTH || known.has(secret)) return;
    known.add(secret);
    if (known.size > MAX_SECRETS) {
      const oldest = known.values().next().value;
      if (oldest !== undefined) known.delete(oldest);
    }
    // Longest first, so a secret containing another is replaced whole.
    sorted = [...known].sort((a, b) => b.length - a.length);
  };

  const redact = (text: string): string => {
    let out = text;
    for (const secret of sorted) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
    return out;
  };

  const redactValue = (value: unknown, depth = 0): unknown => {
    if (typeof value === 'string') return redact(value);
    if (value === null || typeof value !== 'object' || depth > 8) return value;
    if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      out[key] = SECRET_KEY.test(key) && v !== undefined && v !== null ? REDACTED : redactValue(v, depth + 1);
    }
    return out;
  };

  for (const s of secrets) add(s);
  return { add, redact, redactValue: (value) => redactValue(value) };
}
