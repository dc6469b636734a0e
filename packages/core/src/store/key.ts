import { createHash } from 'node:crypto';

/**
 * The stored key of an engine request key: its SHA-256, base64url. Fixed length (an embedded
 * database and a Postgres index both limit key sizes), and the normalised input is not repeated
 * in the key: the stored result holds what the platform answered, not what was asked.
 */
export function storeKey(requestKey: string): string {
  return createHash('sha256').update(requestKey).digest('base64url');
}
