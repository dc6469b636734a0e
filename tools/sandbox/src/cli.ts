#!/usr/bin/env node
import { parseArgs } from 'node:util';
import type { SandboxLogEvent } from './accounts.js';
import { SandboxError } from './errors.js';
import { startSandbox, type Sandbox } from './server.js';

const USAGE = `Usage: dq-sandbox [--port N] [--host 127.0.0.1] [--config accounts.json] [--seed N]

A local sandbox of the data-quality platform: address validation (/location/v1/...), company
validation (/companies/v2), phone describe/analyse (/rest/...) and downloads (/download/v1/...),
all on one origin. Prints that origin (http://<host>:<port>) as the first line of stdout once it
is listening; logs JSON lines to stderr. SIGTERM or SIGINT stop it (exit 0).

Options:
  --port N         TCP port; 0 picks a free one (default 0)
  --host H         interface to listen on (default 127.0.0.1)
  --config FILE    accounts config (JSON); default: one account with API key dq-sandbox-key,
                   every service enabled, the contract's rate limits and a large quota
  --seed N         seed of the generated reference data and of fault injection (default 1)
  -h, --help       show this help

Exit codes: 0 stopped by a signal; 1 could not listen or failed; 2 bad flags or config.`;

/** Exit codes (docs/architecture.md). */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

function usageError(message: string): never {
  throw new SandboxError('usage', `${message}\nRun dq-sandbox --help for usage.`);
}

function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) usageError(`--${name} must be an integer, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max) usageError(`--${name} must be from ${min} to ${max}, got ${n}`);
  return n;
}

function parseFlags(argv: string[]): { help: true } | { help: false; port?: number; host?: string; config?: string; seed?: number } {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
        seed: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    usageError((err as Error).message);
  }
  if (values.help === true) return { help: true };
  const port = intFlag('port', values.port, 0, 65535);
  const seed = intFlag('seed', values.seed, -2147483648, 4294967295);
  if (values.host === '') usageError('--host must not be empty');
  return {
    help: false,
    ...(port === undefined ? {} : { port }),
    ...(seed === undefined ? {} : { seed }),
    ...(values.host === undefined ? {} : { host: values.host }),
    ...(values.config === undefined ? {} : { config: values.config }),
  };
}

async function main(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  if (flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const log = (event: SandboxLogEvent) => process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`);
  const { help: _help, ...options } = flags;
  // Handlers go in before the URL is printed: a supervisor may signal as soon as it reads it.
  let sandbox: Sandbox | undefined;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (sandbox !== undefined) closeAndExit(sandbox);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  sandbox = await startSandbox({ ...options, log });
  if (stopping) {
    closeAndExit(sandbox);
    return;
  }
  process.stdout.write(`${sandbox.url}\n`);
}

function closeAndExit(sandbox: Sandbox): void {
  sandbox.close().then(
    () => process.exit(EXIT.ok),
    (err: Error) => {
      process.stderr.write(`dq-sandbox: error while closing: ${err.message}\n`);
      process.exit(EXIT.failed);
    },
  );
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const code =
    err instanceof SandboxError && (err.code === 'usage' || err.code === 'config-invalid' || err.code === 'config-unreadable') ? EXIT.usage : EXIT.failed;
  process.stderr.write(`dq-sandbox: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = code;
});
