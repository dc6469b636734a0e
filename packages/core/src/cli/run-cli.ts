/**
 * The command-line plumbing every CLI of the project shares: flag parsing that turns node's
 * `parseArgs` errors into the CLI's usage error, and one way to report the error that ended a
 * command (message or stack, exit code from the README's table). The engine flags themselves are
 * in `flags.ts`.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { exitCodeFor } from '../engine/exit-codes.js';
import { hasExitCode } from '../errors/error-codes.js';
import { ExitCode } from '../errors/exit-code.js';
import { nearestNames } from './nearest.js';

type FlagOptions = NonNullable<ParseArgsConfig['options']>;
/** What {@link parseFlags} returns for `options`. */
export type ParsedFlags<O extends FlagOptions> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/**
 * `parseArgs` (strict, positionals allowed) of `argv`; an unknown flag (with the nearest known
 * one), a missing value or a value flag followed by another flag throws `usageError('arguments', …)`
 * naming the flag.
 */
export function parseFlags<const O extends FlagOptions>(
  argv: readonly string[],
  options: O,
  usageError: (flag: string, problem: string) => Error,
): ParsedFlags<O> {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usageError('arguments', flagProblem(err as NodeJS.ErrnoException, Object.keys(options)));
  }
}

/**
 * What a person needs to read about a command line `parseArgs` refused: an unknown flag with the
 * nearest known one, a value flag followed by another flag, else `parseArgs`'s own message (which
 * names the flag).
 */
function flagProblem(err: NodeJS.ErrnoException, known: readonly string[]): string {
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /^Unknown option '([^']+)'/.exec(err.message)?.[1];
    if (flag !== undefined) {
      const [near] = nearestNames(flag.replace(/^-+/, '').split('=')[0] ?? '', known);
      return `unknown flag '${flag}'${near === undefined ? '' : `; did you mean --${near}?`}`;
    }
  }
  const ambiguous = /^Option '([^' ]+)[^']*' argument is ambiguous/.exec(err.message)?.[1];
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && ambiguous !== undefined) {
    return `'${ambiguous}' is followed by another flag where its value belongs: write ${ambiguous} <value> (a value that starts with a dash as ${ambiguous}=-5)`;
  }
  return err.message;
}

/** What a CLI prints and exits with for the error that ended a command. */
export interface CliFailure {
  exitCode: ExitCode;
  /**
   * One line, redacted and newline-terminated: `<tool>: <code>: <message>`, or for an unforeseen
   * error `<tool>: unexpected error: <message>; …` naming the file that holds its stack.
   */
  text: string;
}

/**
 * The report of `err` for `tool` (e.g. `dq-csv`): its exit code by `exitCodeFor`, and one line
 * naming the error's code and message. An unexpected error (exit 1: a bug) is one line too: its
 * stack, which a user can pass on in a bug report, goes to a file of its own in the temporary
 * folder (mode 0600), never onto the terminal or the scheduler's log. `redact` removes the run's
 * secrets, from the file as well.
 */
export function cliFailure(tool: string, err: unknown, redact: (text: string) => string = (t) => t): CliFailure {
  const exitCode = exitCodeFor(err);
  const e = err as { code?: unknown; message?: unknown; stack?: unknown } | undefined;
  const message = String(e?.message ?? err);
  // An error with an exit code of its own was foreseen, exit 1 included: a write the machine refused
  // (a full disk under the store, the output or a download's target) is no bug, and says what to do.
  if (exitCode !== ExitCode.UNEXPECTED || hasExitCode(err)) {
    return { exitCode, text: redact(`${tool}: ${typeof e?.code === 'string' ? `${e.code}: ` : ''}${message}\n`) };
  }
  const details = detailsFile(tool, redact(String(e?.stack ?? err)));
  const where = details === undefined ? '' : ` with ${details} (the details)`;
  return { exitCode, text: redact(`${tool}: unexpected error: ${message.split('\n')[0]}; this is a bug in ${tool}: please report it${where}\n`) };
}

/** Writes `text` to a new file of the temporary folder, readable by this user only; its path, or undefined when it cannot. */
function detailsFile(tool: string, text: string): string | undefined {
  const path = join(tmpdir(), `${tool}-error-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}.txt`);
  try {
    writeFileSync(path, `${text}\n`, { mode: 0o600, flag: 'wx' });
    return path;
  } catch {
    return undefined;
  }
}
