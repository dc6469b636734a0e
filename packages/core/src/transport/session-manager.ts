import { unwatchAbort, watchAbort, type AbortWatcher } from '../abort-watch.js';
import { abortedError } from '../errors/aborted.js';

/** Starts a session for `country` and returns its token (POST /location/v1/start-session). */
export type StartSession = (country: string) => Promise<string>;

/** Options of {@link SessionManager}. */
export interface SessionManagerOptions {
  /** Calls start-session; the manager makes sure concurrent callers share one call per country. */
  start: StartSession;
  /** Token lifetime in ms, counted from when start-session was sent (default 180 000, docs/platform-contract.md). */
  lifetimeMs?: number;
  /** Renew this many ms before the lifetime ends (default 30 000). */
  renewBeforeMs?: number;
  /** Clock in ms (default `Date.now`). */
  now?: () => number;
}

interface Entry {
  token: string;
  /** Renew at or after this time (ms). */
  renewAt: number;
}

/**
 * One session token per country, used verbatim as issued (contract 5.4). Renewed before its
 * lifetime runs out and, through {@link SessionManager.renew}, when the platform answers 403
 * Expired Session Token. Concurrent callers wait for one shared start-session per country.
 */
export class SessionManager {
  readonly #start: StartSession;
  readonly #lifetimeMs: number;
  readonly #renewBeforeMs: number;
  readonly #now: () => number;
  readonly #tokens = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<string>>();
  #starts = 0;

  constructor(options: SessionManagerOptions) {
    const { start, lifetimeMs = 180_000, renewBeforeMs = 30_000, now = Date.now } = options;
    if (!(lifetimeMs > 0)) throw new RangeError(`sessionLifetimeMs must be > 0; got ${lifetimeMs}`);
    if (!(renewBeforeMs >= 0 && renewBeforeMs < lifetimeMs)) {
      throw new RangeError(`sessionRenewBeforeMs must be ≥ 0 and below the lifetime (${lifetimeMs}); got ${renewBeforeMs}`);
    }
    this.#start = start;
    this.#lifetimeMs = lifetimeMs;
    this.#renewBeforeMs = renewBeforeMs;
    this.#now = now;
  }

  /** Start-session calls made so far (for reports and tests). */
  get starts(): number {
    return this.#starts;
  }

  /** A valid token for `country`, starting or renewing a session if needed. */
  token(country: string, signal?: AbortSignal): Promise<string> {
    const entry = this.#tokens.get(country);
    if (entry !== undefined && this.#now() < entry.renewAt) return Promise.resolve(entry.token);
    return this.#startShared(country, signal);
  }

  /**
   * The platform refused `staleToken` as expired: returns a new token. If another caller already
   * replaced that token, its replacement is returned without a second start-session.
   */
  renew(country: string, staleToken: string, signal?: AbortSignal): Promise<string> {
    const entry = this.#tokens.get(country);
    if (entry !== undefined && entry.token === staleToken) this.#tokens.delete(country);
    return this.token(country, signal);
  }

  /** Forgets every token (e.g. when the API key changes). */
  clear(): void {
    this.#tokens.clear();
  }

  #startShared(country: string, signal: AbortSignal | undefined): Promise<string> {
    let shared = this.#inFlight.get(country);
    if (shared === undefined) {
      const sentAt = this.#now();
      this.#starts++;
      shared = this.#start(country)
        .then((token) => {
          this.#tokens.set(country, { token, renewAt: sentAt + this.#lifetimeMs - this.#renewBeforeMs });
          return token;
        })
        .finally(() => this.#inFlight.delete(country));
      this.#inFlight.set(country, shared);
    }
    return signal === undefined ? shared : raceAbort(shared, signal);
  }
}

// One caller giving up must not cancel the start-session other callers wait for.
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortedError(signal));
  return new Promise<T>((resolve, reject) => {
    // Every call of a batch may wait here with the batch's signal: they share its one listener.
    const watcher: AbortWatcher = { onCallerAbort: () => reject(abortedError(signal)) };
    watchAbort(signal, watcher);
    promise.then(
      (v) => {
        unwatchAbort(signal, watcher);
        resolve(v);
      },
      (e: unknown) => {
        unwatchAbort(signal, watcher);
        reject(e);
      },
    );
  });
}
