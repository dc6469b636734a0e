/**
 * The command-line plumbing every CLI of the project shares: flag parsing that turns node's
 * `parseArgs` errors into the CLI's usage error, and one way to report the error that ended a
 * command (message or stack, exit code from the README's table). The engine flags themselves are
 * in `flags.ts`.
 */
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';
import { exitCodeFor } from '../engine/exit-codes.js';
import { ExitCode } from '../errors/exit-code.js';

type FlagOptions = NonNullable<ParseArgsConfig['options']>;
/** What {@link parseFlags} returns for `options`. */
export type ParsedFlags<O extends FlagOptions> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/**
 * `parseArgs` (strict, positionals allowed) of `argv`; an unknown flag or a missing value throws
 * `usageError('arguments', <node's message, which names the flag>)`.
 */
export function parseFlags<const O extends FlagOptions>(
  argv: readonly string[],
  options: O,
  usageError: (flag: string, problem: string) => Error,
): ParsedFlags<O> {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs names the flag in its message; it has no finer code than ERR_PARSE_ARGS_*.
    throw usageError('arguments', (err as Error).message);
  }
}

/** What a CLI prints and exits with for the error that ended a command. */
export interface CliFailure {
  exitCode: ExitCode;
  /** `<tool>: <code>: <message>`, or `<tool>: unexpected error: <stack>` for an unforeseen one; redacted, newline-terminated. */
  text: string;
}

/**
 * The report of `err` for `tool` (e.g. `dq-csv`): its exit code by `exitCodeFor`, and one line
 * naming the error's code and message; only an unexpected error (exit 1) shows its stack, which a
 * user can pass on in a bug report. `redact` removes the run's secrets.
 */
export function cliFailure(tool: string, err: unknown, redact: (text: string) => string = (t) => t): CliFailure {
  const exitCode = exitCodeFor(err);
  const e = err as { code?: unknown; message?: unknown; stack?: unknown } | undefined;
  const text =
    exitCode === ExitCode.UNEXPECTED
      ? `${tool}: unexpected error: ${String(e?.stack ?? err)}\n`
      : `${tool}: ${typeof e?.code === 'string' ? `${e.code}: ` : ''}${String(e?.message ?? err)}\n`;
  return { exitCode, text: redact(text) };
}
