/**
 * The `dq-refdata` command line: parses flags, runs a command, prints one JSON summary line on
 * stdout (messages and warnings go to stderr) and returns the exit code.
 */
import { join } from 'node:path';
import { ExitCode, createLogger, exitCodeFor, type Logger } from '@dq/core';
import { checkEmptyFlags, parseFlags } from '@dq/core/cli';
import { userCacheDir } from '@dq/core/files';
import { readConfigFile, refuseUnexpandedHome, resolveSyncConfig } from './config.js';
import { UsageError } from './errors.js';
import { describePhone, parseDuration } from './phone-describe.js';
import { runSync } from './sync.js';
import { targetStatus, verifyTarget, type VerifySummary } from './verify.js';

export const USAGE = `Usage:
  dq-refdata sync --config refdata.json
  dq-refdata sync --download-url URL --api-key KEY --target DIR --products post,autocompletion,phone
                  --countries DE,AT,INT_EUROPE --release release-v3 --platform linux_x64
                  [--levels 001,002] [--software software-bundle:linux,uws:linux] [--keep 2]
                  [--lock-wait SECONDS] [--timeout-ms MS]
  dq-refdata verify --target DIR
  dq-refdata status --target DIR
  dq-refdata phone-describe [--max-age 1d] [--realtime-url URL] [--api-key KEY] [--cache FILE | --target DIR]

Defaults: --levels 001, --software none, --keep 2 (complete versions kept in the target),
--lock-wait 0 (another sync holding the target: exit 75 at once), --timeout-ms 30000 (wait for
a response's headers, and the longest silence within a body), phone-describe --max-age 1d.
Environment: DQ_API_KEY, DQ_DOWNLOAD_URL, DQ_REALTIME_URL stand in for the flags.
Exit codes: 0 up to date or updated; 1 checksum mismatch, artifact not found or unexpected error;
2 bad usage or configuration; 3 credentials or account refused; 75 service unavailable or target
locked by another sync (retry later).`;

const OPTIONS = {
  config: { type: 'string' },
  'download-url': { type: 'string' },
  'api-key': { type: 'string' },
  target: { type: 'string' },
  products: { type: 'string' },
  countries: { type: 'string' },
  release: { type: 'string' },
  platform: { type: 'string' },
  levels: { type: 'string' },
  software: { type: 'string' },
  keep: { type: 'string' },
  'lock-wait': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'max-age': { type: 'string' },
  'realtime-url': { type: 'string' },
  cache: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Where output goes (tests capture it). */
export interface CliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
}

const camel = (k: string) => k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Runs `dq-refdata` with `argv` (without node and script) and returns the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const logger = createLogger({ level: 'warn', write: (l) => io.stderr(l.trimEnd()) });
  let command = 'unknown';
  try {
    const parsed = parseFlags(argv, OPTIONS, (_flag, problem) => new UsageError(problem));
    const { values, positionals } = parsed;
    if (values.help) {
      io.stdout(USAGE);
      return ExitCode.OK;
    }
    checkEmptyFlags(values, USAGE, (flag, problem) => new UsageError(`${flag}: ${problem}`));
    command = positionals[0] ?? '';
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'a command is required' : `unexpected argument "${positionals[1]}"`);
    const apiKey = values['api-key'] ?? io.env['DQ_API_KEY'];
    if (apiKey) logger.redactor.add(apiKey);
    switch (command) {
      case 'sync':
        return await sync(values, apiKey, io, logger);
      case 'verify': {
        const s = await verifyTarget(requireTarget(values.target), io.signal);
        io.stdout(JSON.stringify(s));
        for (const p of s.problems) io.stderr(`dq-refdata: ${p.path}: ${p.problem} (${p.detail})${repair(p, s.current)}`);
        if (s.ok) return ExitCode.OK;
        if (s.syncRunning === undefined) return ExitCode.UNEXPECTED;
        // Files being placed, pruned or switched by a running sync are not damage (README "verify").
        io.stderr(
          `dq-refdata: a sync of this target (pid ${s.syncRunning}) was running while verify read it: what verify found may be its work in progress; run dq-refdata verify again once that sync has ended`,
        );
        return ExitCode.TEMPFAIL;
      }
      case 'status':
        io.stdout(JSON.stringify(await targetStatus(requireTarget(values.target))));
        return ExitCode.OK;
      case 'phone-describe':
        return await phoneDescribe(values, apiKey, io, logger);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    const code = exitCodeFor(e);
    const message = logger.redactor.redact(e instanceof Error ? e.message : String(e));
    io.stderr(`dq-refdata: ${message}`);
    if (code === ExitCode.USAGE) io.stderr('Run dq-refdata --help for usage.');
    io.stdout(JSON.stringify({ command, status: 'failed', exitCode: code, code: (e as { code?: string }).code ?? 'unexpected', message }));
    return code;
  }
}

type Values = Partial<Record<keyof typeof OPTIONS, string | boolean>>;

/**
 * What to do about a file verify found missing or different: sync fetches again the files of the
 * version `current` points to and the software packages, not those of older versions it keeps.
 */
function repair(p: VerifySummary['problems'][number], current: string | undefined): string {
  if (p.problem === 'not-a-file') return '; then run dq-refdata sync: it downloads this file again and keeps the files that match';
  if (p.problem !== 'missing' && p.problem !== 'size-differs' && p.problem !== 'digest-differs') return '';
  if ((current !== undefined && p.path.startsWith(`${current}/`)) || p.path.startsWith('software/')) {
    return '; run dq-refdata sync: it downloads this file again and keeps the files that match';
  }
  return '; it belongs to an older version, which sync does not fetch again: it is removed once --keep newer versions are complete';
}

function requireTarget(target: string | boolean | undefined): string {
  if (typeof target !== 'string' || target === '') throw new UsageError('--target DIR is required');
  refuseUnexpandedHome('--target', target);
  return target;
}

async function sync(values: Values, apiKey: string | undefined, io: CliIo, logger: Logger): Promise<number> {
  const raw: Record<string, unknown> = typeof values.config === 'string' ? await readConfigFile(values.config) : {};
  // The variables stand in for the flags, so they win over the file, both alike (README "dq-refdata");
  // a file saying otherwise is named, never silently overridden.
  const stands = [
    ['downloadUrl', 'DQ_DOWNLOAD_URL', values['download-url'], io.env['DQ_DOWNLOAD_URL']],
    ['apiKey', 'DQ_API_KEY', values['api-key'], io.env['DQ_API_KEY']],
  ] as const;
  for (const [key, variable, flag, fromEnv] of stands) {
    if (flag !== undefined || !fromEnv) continue;
    if (raw[key] !== undefined && raw[key] !== fromEnv) {
      const shown = key === 'apiKey' ? 'another API key' : JSON.stringify(raw[key]);
      io.stderr(
        `dq-refdata: warning: ${variable} is used, not "${key}" of ${String(values.config)} (${shown}): the variable stands in for the flag, which wins over the file; unset ${variable} to use the file's`,
      );
    }
    raw[key] = fromEnv;
  }
  if (apiKey !== undefined) raw['apiKey'] = apiKey;
  for (const [k, v] of Object.entries(values)) {
    if (k === 'config' || k === 'api-key' || k === 'help' || k === 'max-age' || k === 'realtime-url' || k === 'cache') continue;
    if (v !== undefined) raw[camel(k)] = v;
  }
  if (typeof raw['apiKey'] === 'string') logger.redactor.add(raw['apiKey']);
  const cfg = resolveSyncConfig(raw);
  const { summary, error } = await runSync(cfg, { logger, ...(io.signal ? { signal: io.signal } : {}) });
  for (const w of summary.warnings) io.stderr(`dq-refdata: warning: ${w}`);
  for (const f of summary.failures) io.stderr(`dq-refdata: ${f.message}`);
  if (error === undefined) {
    io.stdout(JSON.stringify(summary));
    return ExitCode.OK;
  }
  const code = exitCodeFor(error);
  const message = logger.redactor.redact(error instanceof Error ? error.message : String(error));
  if (summary.failures.length === 0) io.stderr(`dq-refdata: ${message}`);
  io.stdout(JSON.stringify({ ...summary, exitCode: code, code: (error as { code?: string }).code ?? 'unexpected', message }));
  return code;
}

/** Whether `text` is an absolute http: or https: URL (`localhost:8080` parses, as scheme `localhost:`). */
function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** The phone-describe cache in the user's cache folder; a usage error (exit 2) where there is none. */
function defaultCacheFile(env: Readonly<Record<string, string | undefined>>): string {
  const cache = userCacheDir(env);
  if (cache === undefined) {
    throw new UsageError(
      'phone-describe has no default cache file: neither XDG_CACHE_HOME nor HOME is set to an absolute path, and this user has no home folder in the user database; set XDG_CACHE_HOME or HOME, or give --cache FILE or --target DIR',
    );
  }
  return join(cache, 'dq-refdata', 'phone-describe.json');
}

async function phoneDescribe(values: Values, apiKey: string | undefined, io: CliIo, logger: Logger): Promise<number> {
  const realtimeUrl = (values['realtime-url'] as string | undefined) ?? io.env['DQ_REALTIME_URL'];
  if (!realtimeUrl) throw new UsageError('--realtime-url URL (or DQ_REALTIME_URL) is required');
  if (!isHttpUrl(realtimeUrl)) {
    throw new UsageError(`--realtime-url (or DQ_REALTIME_URL) must be an http(s) URL such as https://api.example.com; got ${JSON.stringify(realtimeUrl)}`);
  }
  if (!apiKey) throw new UsageError('--api-key KEY (or DQ_API_KEY) is required');
  if (typeof values.cache === 'string' && typeof values.target === 'string') {
    // Either names the cache file (README "phone-describe"): with both, one would be ignored.
    throw new UsageError(
      `phone-describe takes --cache FILE or --target DIR, not both (--cache ${values.cache}, --target ${values.target}): give the one that names the cache to use`,
    );
  }
  if (typeof values.cache === 'string') refuseUnexpandedHome('--cache', values.cache);
  if (typeof values.target === 'string') refuseUnexpandedHome('--target', values.target);
  // Default: the user's cache folder, found as the result store's is (never a relative path into the
  // working folder).
  const cacheFile =
    typeof values.cache === 'string' ? values.cache : typeof values.target === 'string' ? join(values.target, 'phone-describe.json') : defaultCacheFile(io.env);
  const maxAgeMs = parseDuration(typeof values['max-age'] === 'string' ? values['max-age'] : '1d');
  const r = await describePhone({ realtimeUrl, apiKey, cacheFile, maxAgeMs, logger, ...(io.signal ? { signal: io.signal } : {}) });
  if (r.warning !== undefined) io.stderr(`dq-refdata: warning: ${r.warning}`);
  const parameters = r.description.content.flatMap((c) => c.parameters.map((p) => p.name));
  io.stdout(JSON.stringify({ command: 'phone-describe', status: 'ok', source: r.source, fetchedAt: r.fetchedAt, ageMs: r.ageMs, cacheFile, parameters }));
  return ExitCode.OK;
}
