import { isRunStop, LOCAL_CODES } from '../errors/index.js';
import { ExitCode } from '../errors/exit-code.js';
import { STORE_UNREACHABLE } from '../store/errors.js';
import { BUDGET_UNREACHABLE } from '../throttle/budget.js';
import { exitCodeFor } from './exit-codes.js';

/**
 * What an error that ended a run asks of the operator, as {@link stopAdvice} sorts it:
 * - `cap`: the spending cap (--max-calls) was reached (exit 5);
 * - `account`: the platform refused the account or key: key, plan or quota (exit 3);
 * - `proxy`: the HTTP proxy refused the connection, for its credentials or rules (exit 3);
 * - `fix-config`: the shared rate budget cannot be used: its database, user, grants or server's version (exit 2);
 * - `platform-url`: the platform has no endpoint at the URL the calls went to (exit 2);
 * - `budget-db`: the shared rate budget's database could not be reached (exit 75);
 * - `store-db`: the result store's database could not be reached (exit 75);
 * - `rate-limit`: the platform kept refusing calls for the account's rate limit (exit 75);
 * - `platform-later`: the platform could not be reached, or asked to come back later (exit 75);
 * - `failed`: anything else that is no run stop (a fault, a bug, or a setting, grant or input the
 *   error names, exit 2, to be fixed before resuming): its own message says more.
 */
export type StopKind = 'cap' | 'account' | 'proxy' | 'fix-config' | 'platform-url' | 'budget-db' | 'store-db' | 'rate-limit' | 'platform-later' | 'failed';

/** How a connector continues a stopped run, in its own words, for {@link stopAdvice}. */
export interface ResumeWords {
  /** The act that continues the run: `rerun with --resume`, `restart`, `rerun with --run-id nightly`. */
  resume: string;
  /**
   * What that keeps of the stopped run, said where an operator may fear paying twice or losing
   * work (the cap, an unreachable budget database, the platform down), e.g. `answers already paid
   * for are not bought again`.
   */
  kept?: string;
}

/** What to tell the operator when a run stopped: {@link stopAdvice}. */
export interface StopAdvice {
  kind: StopKind;
  /** Why the run stopped, for a line that does not carry the error's own message ("the spending cap (--max-calls) was reached"). */
  cause: string;
  /** What to do now, a clause to follow the error's message ("fix the proxy setting and rerun with --resume"). */
  advice: string;
}

/** The sort of {@link stopAdvice}, beside {@link exitCodeFor}'s exit code. */
export function stopKind(err: unknown): StopKind {
  if ((err as { code?: unknown } | undefined)?.code === STORE_UNREACHABLE) return 'store-db';
  if (!isRunStop(err)) return 'failed';
  if (err.code === 'proxy-refused') return 'proxy';
  if (err.code === LOCAL_CODES.platformUrlUnknown) return 'platform-url';
  if (err.code === LOCAL_CODES.rateLimited) return 'rate-limit';
  switch (exitCodeFor(err)) {
    case ExitCode.MAX_CALLS:
      return 'cap';
    case ExitCode.STOP:
      return 'account';
    case ExitCode.USAGE:
      return 'fix-config';
    default:
      return err.code === BUDGET_UNREACHABLE ? 'budget-db' : 'platform-later';
  }
}

/**
 * The one answer of every connector (dq-csv, dq-pg, dq-kafka) to "what should the operator do
 * now" when an error ended a run: its {@link StopKind}, the cause in a few words and the advice,
 * built from the connector's own way to resume (`words`). The README's exit code table says the
 * same per exit code.
 */
export function stopAdvice(err: unknown, words: ResumeWords): StopAdvice {
  const { resume } = words;
  const kept = words.kept === undefined ? '' : ` (${words.kept})`;
  const kind = stopKind(err);
  switch (kind) {
    case 'cap':
      return { kind, cause: 'the spending cap (--max-calls) was reached', advice: `${resume} to continue${kept}, with a new --max-calls or none` };
    case 'account':
      return { kind, cause: 'the platform refused the account or key', advice: `fix the key, account, plan or quota, then ${resume}` };
    case 'proxy':
      return { kind, cause: 'the proxy refused the connection', advice: `fix the proxy setting and ${resume}` };
    case 'fix-config':
      return {
        kind,
        cause: "the shared rate budget cannot be used (its database, user, grants or server's version)",
        advice: `fix what the error names, then ${resume}`,
      };
    case 'platform-url':
      return { kind, cause: 'the platform has no endpoint at the URL the run calls', advice: `fix that URL, then ${resume}` };
    case 'budget-db':
      return { kind, cause: "the shared rate budget's database could not be reached", advice: `${resume} once the budget's database answers again${kept}` };
    case 'store-db':
      return { kind, cause: "the result store's database could not be reached", advice: `${resume} once the store's database answers again${kept}` };
    case 'rate-limit':
      return {
        kind,
        cause: "the platform kept refusing calls for the account's rate limit",
        advice: `give everything that uses the account one shared rate budget (the same --account-db postgres://… for every job), or lower --rate-limit, then ${resume}${kept}`,
      };
    case 'platform-later':
      return {
        kind,
        cause: 'the platform could not be reached, or asked to come back later',
        advice: `${resume} later, once the platform answers again${kept}`,
      };
    case 'failed':
      // A setting, a grant or an input the error names (exit 2) would stop the rerun again as it is.
      return { kind, cause: 'the run failed', advice: exitCodeFor(err) === ExitCode.USAGE ? `fix what the error names, then ${resume}` : resume };
  }
}
