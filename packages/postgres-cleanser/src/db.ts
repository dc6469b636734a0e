import pg from 'pg';
import type { Redactor } from '@dq/core';
import { connectionError, usageError } from './errors.js';

/** A connection string checked and described without its password. */
export interface DbTarget {
  url: string;
  /** `host:port/database`, safe to print. */
  where: string;
}

/**
 * Checks a `postgres://` URL, registers its password with `redactor` (so no log line or error
 * message shows it) and describes it without the password.
 */
export function dbTarget(url: string | undefined, redactor?: Redactor): DbTarget {
  if (!url) throw usageError('--db', 'required: the database URL, e.g. postgres://user@host:5432/db (or set DQ_DATABASE_URL)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError('--db', 'is not a URL of the form postgres://user:password@host:port/database');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw usageError('--db', `scheme "${parsed.protocol}" is not postgres: or postgresql:`);
  }
  if (parsed.password) {
    redactor?.add(parsed.password);
    redactor?.add(decodeURIComponent(parsed.password));
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default)';
  return { url, where: `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${database}` };
}

/** Opens one connection (application name `dq-pg`); connection failures become CleanseErrors. */
export async function connect(target: DbTarget, applicationName = 'dq-pg'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: target.url, application_name: applicationName });
  // An idle client whose server goes away emits 'error'; the next query then fails and is handled there.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw connectionError(e, target.where);
  }
  return client;
}

/** Runs `fn` inside BEGIN … COMMIT, rolling back when it throws. */
export async function inTransaction<T>(client: pg.Client, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const out = await fn();
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Quotes an SQL identifier (doubling embedded quotes), whatever characters it holds. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
