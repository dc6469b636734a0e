import type { EndpointId } from '../throttle/types.js';
import { ageProblem, parseAge } from '../store/age.js';
import { withoutUrlPasswords } from './command-line.js';

/** The engine flags every connector's CLI takes, as `util.parseArgs` options. */
export const ENGINE_FLAG_OPTIONS = {
  concurrency: { type: 'string' },
  threads: { type: 'string' },
  'rate-limit': { type: 'string' },
  store: { type: 'string' },
  'max-age': { type: 'string' },
  'account-db': { type: 'string' },
  budget: { type: 'string' },
  account: { type: 'string' },
  'max-calls': { type: 'string' },
} as const;

/** The `--help` lines of {@link ENGINE_FLAG_OPTIONS}. */
export const ENGINE_FLAGS_USAGE = `  --concurrency <n>         HTTP calls in flight, default 32
  --threads <n>             engine worker threads (0: calls on the main thread), default one
                            per core beyond the first, 0 on a machine of 1–2 cores
  --rate-limit <rps>        platform requests per second, default the contract's for addresses
                            (batch/sync 100); company searches 10 (the contract names none:
                            raise it to your plan's); 0 = no client-side limit
  --store <dir|url|off>     result store: answers kept across runs are not bought again; a
                            folder (default ~/.cache/dq-connectors/store; dq-pg: its own
                            database), postgres://… (one store for every process and machine),
                            or off. It holds addresses and company names: see the README
  --max-age <age>           reuse stored answers younger than this, e.g. 30d, 12h, 90m, 45s;
                            default 30d; 0 = call everything (fresh answers are still stored)

  --account-db <url>        postgres://… holding what the account shares: the rate budget of
                            every process and machine using this API key, and the result store
  --budget <url|off>        where the rate budget lives instead (a postgres:// URL), or off:
                            this process's own (default: --account-db's, else this process's;
                            dq-pg: its own database, shared by the processes of a run)
  --account <name>          name of the account the shared budget belongs to (default: a
                            digest of the API key and base URL; the key is never stored)
  --max-calls <n>           spending cap: stop (exit 5, resumable) before billable call n+1`;

/** The engine settings the engine flags give; flags not given are left out. */
export interface EngineFlagSettings {
  concurrency?: number;
  threads?: number;
  rateLimits?: Partial<Record<EndpointId, number>>;
  /** `--store` as given (a folder, a postgres:// URL, or `off`); resolved by `openStore`. */
  store?: string;
  /** `--max-age` in milliseconds. */
  maxAgeMs?: number;
  /** `--budget`, else `--account-db`: a postgres:// URL, or `off`. */
  budget?: string;
  /** `--account`. */
  account?: string;
  /** `--max-calls`. */
  maxCalls?: number;
}

/** The engine flags' values as `util.parseArgs` returns them (undefined: not given). */
export interface EngineFlagValues {
  concurrency?: string | undefined;
  threads?: string | undefined;
  'rate-limit'?: string | undefined;
  'account-db'?: string | undefined;
  budget?: string | undefined;
  account?: string | undefined;
  'max-calls'?: string | undefined;
  store?: string | undefined;
  'max-age'?: string | undefined;
}

/** Checks of command-line flag values, shared by every connector's CLI. */
export interface FlagParsers {
  /** `value` if it is one of `allowed`, else a usage error naming the flag and the choices. */
  oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T;
  /** `text` as a number within [min, max] (an integer when `integer`), else a usage error. */
  number(flag: string, text: string, min: number, max: number, integer: boolean): number;
  /** `text` if it is a postgres:// URL, else a usage error (that does not repeat the value). */
  postgresUrl(flag: string, text: string): string;
  /** `text` if it is an http(s) URL (undefined passes through), else a usage error. */
  url(flag: string, text: string | undefined): string | undefined;
  /**
   * The engine flags' values (undefined: not given) as engine settings; `--rate-limit` applies to
   * whichever validation endpoint the mode calls (batch/sync, validate, company).
   */
  engine(values: EngineFlagValues): EngineFlagSettings;
}

/** A number as people write it in decimal: `5`, `-1`, `0.05`, `.5`, `1e3`. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Flag checks whose failures are built by `fail(flag, problem)`, so each CLI keeps its own error
 * class and exit code while the checks and their messages are written once.
 */
export function createFlagParsers(fail: (flag: string, problem: string) => Error): FlagParsers {
  const parsers: FlagParsers = {
    oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
      if (!(allowed as readonly string[]).includes(value)) throw fail(flag, `"${value}" is not one of ${allowed.join(', ')}`);
      return value as T;
    },
    number(flag, text, min, max, integer) {
      // Decimal only: Number() would also take 0x10, 0b11 and text padded with spaces.
      const n = DECIMAL.test(text) ? Number(text) : NaN;
      if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
        throw fail(flag, `"${text}" must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
      }
      return n;
    },
    url(flag, text) {
      if (text === undefined) return undefined;
      let protocol: string;
      // The URL may hold a password: the message shows the URL without it.
      const refused = () => fail(flag, `"${withoutUrlPasswords(text)}" is not an http(s) URL`);
      try {
        protocol = new URL(text).protocol;
      } catch {
        throw refused();
      }
      if (protocol !== 'http:' && protocol !== 'https:') throw refused();
      const { search, hash } = new URL(text);
      // The endpoints' paths are appended to it: a query or fragment would end up in the middle.
      if (search !== '' || hash !== '')
        throw fail(
          flag,
          `"${withoutUrlPasswords(text)}" has a ${search !== '' ? 'query (?…)' : 'fragment (#…)'}: give the platform's base URL alone, e.g. https://api.example.com`,
        );
      return text;
    },
    postgresUrl(flag, text) {
      let protocol: string;
      try {
        protocol = new URL(text).protocol;
      } catch {
        protocol = '';
      }
      // The URL may hold a password: the message names the flag, never the value.
      if (protocol !== 'postgres:' && protocol !== 'postgresql:') throw fail(flag, 'must be a postgres://user@host:port/database URL');
      return text;
    },
    engine(values) {
      const out: EngineFlagSettings = {};
      if (values.concurrency !== undefined) out.concurrency = parsers.number('--concurrency', values.concurrency, 1, 4096, true);
      if (values.threads !== undefined) out.threads = parsers.number('--threads', values.threads, 0, 64, true);
      const rate = values['rate-limit'];
      if (rate !== undefined) {
        const perSecond = parsers.number('--rate-limit', rate, 0, 100_000, false);
        out.rateLimits = { batch: perSecond, validate: perSecond, company: perSecond };
      }
      if (values.store !== undefined) {
        if (values.store.trim() === '') throw fail('--store', 'is empty: give a folder, a postgres:// URL, or off');
        // `OFF`, ` off`: the word, not a folder of that name the store would quietly be made in.
        out.store = values.store.trim().toLowerCase() === 'off' ? 'off' : values.store;
      }
      const age = values['max-age'];
      if (age !== undefined) {
        const ms = parseAge(age);
        if (ms === undefined) throw fail('--max-age', `${ageProblem(age)} (0 = never reuse)`);
        out.maxAgeMs = ms;
      }
      const accountDb = values['account-db'];
      if (accountDb !== undefined) {
        out.budget = parsers.postgresUrl('--account-db', accountDb);
        if (values.store === undefined) out.store = out.budget;
      }
      if (values.budget !== undefined) out.budget = values.budget.trim().toLowerCase() === 'off' ? 'off' : parsers.postgresUrl('--budget', values.budget);
      if (values.account !== undefined) {
        if (values.account.trim() === '' || values.account.length > 200) throw fail('--account', 'must be a name of 1 to 200 characters');
        out.account = values.account;
      }
      if (values['max-calls'] !== undefined) out.maxCalls = parsers.number('--max-calls', values['max-calls'], 1, Number.MAX_SAFE_INTEGER, true);
      return out;
    },
  };
  return parsers;
}
