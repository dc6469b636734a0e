import type { Readable } from 'node:stream';
import type { AccountRegistry, SandboxLogger } from './accounts.js';
import type { FaultsConfig, ResolvedConfig } from './config.js';
import type { FaultInjector } from './faults.js';
import type { RateLimiter } from './rate-limiter.js';
import type { SessionTokens } from './sessions.js';
import type { StatsRecorder } from './stats.js';

/** What the server needs of the address matcher (see `address/`). */
export interface MatcherPort {
  readonly countries: readonly string[];
  validate(input: { country: string }, include: ReadonlySet<string>): { resultClass: string; results: unknown[] };
  autocomplete(req: { country: string }, include?: ReadonlySet<string>): { results: unknown[] };
}

/** What the server needs of the company service (see `company/`). */
export interface CompanyPort {
  handle(query: URLSearchParams, body: unknown, path: string): { status: number; body: object; totalCount?: number };
}

/** One artifact found by the download store. */
export interface DownloadArtifact {
  auth: boolean;
  size: number;
  contentType: string;
  contentDisposition?: string;
  read(start: number, endInclusive: number): Readable | NodeJS.ReadableStream;
}

/** What the server needs of the download store (see `download/`). */
export interface DownloadPort {
  lookup(pathname: string): DownloadArtifact | { notFound: true; message: string };
}

/** Everything the route handlers share; one per running sandbox. */
export interface SandboxContext {
  readonly config: ResolvedConfig;
  readonly docsUrl: string;
  /** Origin the sandbox answers on (base_url = download_url = realtime_url); set once listening. */
  baseUrl: string;
  readonly accounts: AccountRegistry;
  readonly sessions: SessionTokens;
  readonly limiter: RateLimiter;
  readonly faults: FaultInjector;
  readonly initialFaults: FaultsConfig;
  readonly stats: StatsRecorder;
  readonly log: SandboxLogger;
  readonly matcher: MatcherPort;
  readonly company: CompanyPort;
  readonly downloads: DownloadPort;
}
