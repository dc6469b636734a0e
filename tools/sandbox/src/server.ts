import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { AccountRegistry, type SandboxLogger } from './accounts.js';
import { createAddressMatcher } from './address/index.js';
import { createCompanyService } from './company/index.js';
import { defaultConfig, loadConfigFile, parseConfig, type FaultsInput, type ResolvedConfig, type SandboxConfig } from './config.js';
import type { DownloadPort, SandboxContext } from './context.js';
import { createDownloadStore } from './download/index.js';
import { SandboxError } from './errors.js';
import { FaultInjector, parseFaults } from './faults.js';
import { answerClientError, createRequestListener } from './http/router.js';
import { RateLimiter } from './rate-limiter.js';
import { resetAll } from './routes/admin.js';
import { SessionTokens } from './sessions.js';
import { StatsRecorder, type SandboxStats } from './stats.js';

/** Options of {@link startSandbox}. */
export interface SandboxOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /** Accounts config as an object, or the path of a JSON file; default: one account, key `dq-sandbox-key`. */
  config?: SandboxConfig | string;
  /** Seed of the reference data, the company register, downloads and fault sequences (default 1). */
  seed?: number;
  /** Receives structured log events (default: none). Keys and tokens never appear in them. */
  log?: SandboxLogger;
}

/** A running sandbox. */
export interface Sandbox {
  /** `http://<host>:<port>`: base_url, download_url and realtime_url at once. */
  readonly url: string;
  readonly port: number;
  /** Stops listening, drops open connections and waits for outbox writes. */
  close(): Promise<void>;
  /** A snapshot of the counters (requests per endpoint and status, billable calls per account, faults). */
  stats(): SandboxStats;
  /** Replaces the injected faults (per endpoint group) and restarts their seeded sequences. */
  setFaults(faults: FaultsInput): void;
  /** Clears the counters only. */
  resetStats(): void;
  /** Clears counters, plan usage, rate-limit state and restores the config's faults (as `POST /__admin/reset`). */
  reset(): void;
}

async function resolveConfig(config: SandboxConfig | string | undefined): Promise<ResolvedConfig> {
  if (typeof config !== 'string') return parseConfig(config ?? defaultConfig());
  const resolved = await loadConfigFile(config);
  // An outbox path in a config file is relative to that file.
  if (resolved.outbox !== null) resolved.outbox = resolve(dirname(config), resolved.outbox);
  return resolved;
}

function downloadStore(seed: number, options: Record<string, unknown>): DownloadPort {
  try {
    return createDownloadStore({ seed, ...options }) as DownloadPort;
  } catch (cause) {
    if (!(cause instanceof TypeError)) throw cause;
    throw new SandboxError('config-invalid', `config field download: ${cause.message}`, { cause });
  }
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(new SandboxError('listen-failed', `cannot listen on ${host}:${port}: ${err.code ?? err.message}`, { cause: err }));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Starts the sandbox of the platform's address, company, phone and download interfaces on one
 * origin. Throws SandboxError `config-invalid` (naming the field) for a bad config and
 * `listen-failed` when the port is taken.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const { port = 0, host = '127.0.0.1', seed = 1, log = () => {} } = options;
  const config = await resolveConfig(options.config);
  const stats = new StatsRecorder();
  const ctx: SandboxContext = {
    config,
    docsUrl: config.docsUrl.replace(/\/+$/, ''),
    baseUrl: '',
    accounts: new AccountRegistry(config, stats, log),
    sessions: new SessionTokens(),
    limiter: new RateLimiter({ slack: config.rateLimitSlack }),
    faults: new FaultInjector(seed, config.faults),
    initialFaults: config.faults,
    stats,
    log,
    matcher: createAddressMatcher({ seed }),
    company: createCompanyService({ seed }),
    downloads: downloadStore(seed, config.download),
  };
  const server = createServer({ keepAliveTimeout: 10_000 }, createRequestListener(ctx));
  server.on('clientError', answerClientError);
  const boundPort = await listen(server, port, host);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  ctx.baseUrl = url;
  log({ event: 'listening', url });

  let closing: Promise<void> | undefined;
  return {
    url,
    port: boundPort,
    close() {
      closing ??= new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }).then(async () => {
        await ctx.accounts.flush();
        log({ event: 'closed' });
      });
      return closing;
    },
    stats: () => stats.snapshot(),
    setFaults: (faults) => ctx.faults.set(parseFaults(faults)),
    resetStats: () => stats.reset(),
    reset: () => resetAll(ctx),
  };
}
