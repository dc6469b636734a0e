import { parseFlags } from '../cli/run-cli.js';
import { DqError } from '../errors/index.js';
import { ageProblem, formatAge, parseAge } from './age.js';
import { lmdbStoreExists, removeDamagedLmdbFile } from './lmdb-store.js';
import { isAccessDenied, storeAccessError, StoreError, withoutRunAdvice } from './errors.js';
import { checkLmdbStoreWritable, defaultStoreDir, openStore, pgStoreExists, readStoreInfo, refuseMistypedStore } from './open.js';
import { redactUrl } from './pg-version.js';

/**
 * The `--help` text of dq-store, with the default store of `env` (built when shown: where there is
 * no default folder, a container under a uid without a home, dq-store still starts and says so).
 */
export function storeUsage(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return `Usage: dq-store <info|prune|clear|init> [--store <dir|postgres-url>] [options]

Shows and trims the result store: the platform's answers kept so that later runs do not buy
them again. It holds addresses and company names (personal data) as the platform answered them.

Commands:
  info                      location, size, entries, oldest and newest check (read access
                            to the store is enough)
  prune --older-than <age>  removes entries checked longer ago than <age> (30d, 12h, 90m, 45s)
  clear                     removes every entry
  init                      creates the store, or upgrades an older Postgres store's layout (run it
                            as the role that is to own schema dq_store)

Options:
  --store <dir|url>         the store: a folder, or postgres://… (env DQ_STORE); default
                            ${shownDefault(env)}
  --json                    one JSON line on stdout instead of text (a failure: nothing on
                            stdout, its line on stderr, and the exit code)
  --help                    this text

Exit codes: 0 done, 1 unexpected error, 2 bad usage or a store that cannot be opened (prune and
clear need write access), 75 the store's database is unreachable, or info could not read a store
that runs kept writing to (without write access to its lock file).
`;
}

/** The default store folder for --help, the home folder shown as `~`. */
function shownDefault(env: Readonly<Record<string, string | undefined>>): string {
  try {
    const dir = defaultStoreDir(env);
    const home = env['HOME'];
    return home && dir.startsWith(`${home}/`) ? `~${dir.slice(home.length)}` : dir;
  } catch {
    return 'none here: set XDG_CACHE_HOME or HOME, or give --store';
  }
}

/** Runs dq-store with `argv` (without node and script); returns the exit code. */
export async function runStoreCli(
  argv: readonly string[],
  io: { out(text: string): void; err(text: string): void } = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  let values: { store?: string; 'older-than'?: string; json?: boolean; help?: boolean };
  let positionals: string[];
  try {
    // As the connectors' CLIs read theirs: an unknown flag is named with the nearest known one.
    ({ values, positionals } = parseFlags(
      argv,
      { store: { type: 'string' }, 'older-than': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      (_flag, problem) => new Error(problem),
    ));
  } catch (e) {
    io.err(`dq-store: ${(e as Error).message}; see dq-store --help\n`);
    return 2;
  }
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') {
    io.out(storeUsage(env));
    return 0;
  }
  const usage = (message: string): number => {
    io.err(`dq-store: ${message}; see dq-store --help\n`);
    return 2;
  };
  if (command !== 'info' && command !== 'prune' && command !== 'clear' && command !== 'init')
    return usage(`expected info, prune, clear or init, got ${command === undefined ? 'nothing' : `"${command}"`}`);
  if (rest.length > 0) return usage(`unexpected "${rest.join(' ')}" after "${command}"`);
  let olderThan: number | undefined;
  if (command === 'prune') {
    if (values['older-than'] === undefined) return usage('prune needs --older-than <age>, e.g. 30d');
    olderThan = parseAge(values['older-than']);
    if (olderThan === undefined) return usage(`--older-than: ${ageProblem(values['older-than'])}`);
  }
  const spec = values.store ?? (env['DQ_STORE'] || undefined);
  if (spec === 'off') return usage('--store off names no store');
  // An empty value (`--store "$DIR"` with DIR unset) names no store: not "nothing stored there".
  if (spec !== undefined && spec.trim() === '') return usage("--store is empty: give the store's folder or a postgres:// URL");
  try {
    refuseMistypedStore(spec);
  } catch (e) {
    return usage((e as Error).message);
  }
  const isUrl = spec !== undefined && /^postgres(ql)?:/i.test(spec);
  let shown: string;
  try {
    shown = isUrl ? redactUrl(spec) : (spec ?? defaultStoreDir(env));
  } catch (e) {
    // No default folder (no home): a one-line error naming what to set, not a stack trace.
    io.err(`dq-store: ${withoutRunAdvice((e as Error).message)}\n`);
    return 2;
  }
  const failed = (e: unknown): number => {
    // An embedded store this user may not read (info) or write (prune, clear): the advice is about
    // this store, the access the command needs, and whom to ask (not another folder to give --store).
    if (!isUrl && command !== 'init' && e instanceof StoreError && e.code === 'store-permission-denied' && isAccessDenied(e.cause))
      e = storeAccessError(shown, e.cause, command, command === 'info' ? 'read' : 'write');
    const message = e instanceof DqError ? e.message : `the result store ${shown} cannot be used (${(e as Error).message})`;
    io.err(`dq-store: ${withoutRunAdvice(message)}\n`);
    return e instanceof DqError && e.retriable ? 75 : 2;
  };
  // A folder or database without a store (nothing stored there yet, or a mistyped path or
  // database name) is reported as such; only `init` (or a run) creates one. A file in the folder's
  // place, a store this user cannot read, or a database that cannot be reached is an error, not
  // "nothing stored".
  let exists: boolean;
  try {
    exists = command === 'init' || (isUrl ? await pgStoreExists(spec) : await lmdbStoreExists(shown));
  } catch (e) {
    return failed(e);
  }
  if (!exists) {
    if (values.json)
      io.out(`${JSON.stringify(command === 'info' ? { location: shown, exists: false, bytes: 0, entries: 0 } : { command, removed: 0, exists: false })}\n`);
    else io.out(`no result store in ${shown}: nothing is stored there (a run with --store ${shown} creates it, or dq-store init)\n`);
    return 0;
  }
  try {
    if (command === 'info') {
      // Read access is all it needs: an embedded store is read without creating or changing anything.
      const info = await readStoreInfo(spec, { env });
      if (values.json) io.out(`${JSON.stringify(info)}\n`);
      else {
        io.out(`store    ${info.location}\nsize     ${(info.bytes / 1024 / 1024).toFixed(1)} MiB\nentries  ${info.entries.toLocaleString('en')}\n`);
        io.out(info.entries === 0 ? 'oldest   -\nnewest   -\n' : `oldest   ${info.oldest}\nnewest   ${info.newest}\n`);
      }
      return 0;
    }
    // prune and clear write: a user who may only read the store is told so before anything is opened.
    if (!isUrl && command !== 'init') await checkLmdbStoreWritable(shown, command);
    // A damaged data file holds no entry that can be read: clear removes it, and the store starts afresh.
    const damage = !isUrl && command === 'clear' ? await removeDamagedLmdbFile(shown) : undefined;
    if (damage !== undefined) {
      if (values.json) io.out(`${JSON.stringify({ command, removed: 0, damaged: damage })}\n`);
      else io.out(`the store file in ${shown} was damaged (${damage}): removed it, with every entry it held\n`);
      return 0;
    }
    const store = (await openStore(spec, { env }))!;
    try {
      if (command === 'init') {
        // Opening the store created it, or upgraded its layout.
        if (values.json) io.out(`${JSON.stringify({ command, store: store.location })}\n`);
        else io.out(`store ${store.location} is ready\n`);
      } else {
        const removed = command === 'prune' ? await store.prune(olderThan!) : await store.clear();
        if (values.json) io.out(`${JSON.stringify({ command, removed, ...(olderThan === undefined ? {} : { olderThan: formatAge(olderThan) }) })}\n`);
        else
          io.out(
            `removed ${removed.toLocaleString('en')} entr${removed === 1 ? 'y' : 'ies'}${olderThan === undefined ? '' : ` checked more than ${formatAge(olderThan)} ago`} from ${store.location}\n`,
          );
      }
    } finally {
      await store.close();
    }
    return 0;
  } catch (e) {
    return failed(e);
  }
}
