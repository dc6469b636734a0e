/**
 * `dq-refdata sync`: brings a target directory up to the platform's current reference-data
 * version. Safe to repeat and to interrupt: every file is verified before it is placed, a file
 * already on disk is hashed and fetched again only when its content no longer matches the
 * server's checksum, cut downloads resume, and `current` switches only when the version is complete.
 */
import { lstat, mkdir, readdir, readlink, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { DqError, PlatformError, createSilentLogger } from '@dq/core';
import { DownloadClient } from '@dq/core/download';
import { dataPath, installerPath, softwarePath, validateDataPath } from '@dq/core/schemas';
import type { Logger } from '@dq/core';
import type { DownloadResult } from '@dq/core/download';
import { installerFor, type SyncConfig } from './config.js';
import { readCurrent, switchCurrent } from './current-pointer.js';
import { checkFoldersInside, describe, NotOursError, sha512OfFile, sizeOf } from './fs-sync.js';
import { UsageError } from './errors.js';
import { acquireLock, LOCK_FILE } from './lock.js';
import { readManifest, upsertFile, writeManifest, type Manifest, type ManifestFile, type ManifestVersion } from './manifest.js';
import { interrupted, targetFileError, writingTo } from './target-fs.js';

/** A data artifact of the subscription. */
interface PlannedArtifact {
  product: string;
  country: string;
  artifact: string;
}

/** What one sync did; printed as one JSON line. */
export interface SyncSummary {
  command: 'sync';
  /** `updated` when anything was placed, switched or removed; `failed` when `error` is set. */
  status: 'updated' | 'up-to-date' | 'failed';
  /** Version announced by version.txt (undefined if it could not be fetched). */
  version: string | undefined;
  /** Version `current` pointed to before this run. */
  previous: string | undefined;
  /** Target-relative paths placed by this run (data and software). */
  downloaded: string[];
  /** Of those, the ones resumed from a part left by an earlier attempt or run. */
  resumed: string[];
  /** Artifacts already on disk whose content this run hashed and found equal to the server's checksum; not fetched again. */
  alreadyVerified: number;
  /** Product/country pairs the contract does not offer (e.g. autocompletion for INT_EUROPE). */
  notOffered: string[];
  /** The installer fetched this run and whether it differs from the last one. */
  installer: { path: string; changed: boolean } | undefined;
  /** Version directories removed by `--keep`. */
  removedVersions: string[];
  /** Files that failed (checksum mismatch, not found); the version stays incomplete. */
  failures: Array<{ source: string; code: string; message: string }>;
  /** Notes for a person (e.g. an unsafe server file name that was replaced). */
  warnings: string[];
  durationMs: number;
}

/** Collaborators of {@link runSync}. */
export interface SyncDeps {
  logger?: Logger;
  signal?: AbortSignal;
}

/** The subscription's data artifacts, and the product/country pairs 2.6 does not offer. */
export function planArtifacts(cfg: Pick<SyncConfig, 'products' | 'countries' | 'levels' | 'release'>): { planned: PlannedArtifact[]; notOffered: string[] } {
  const planned: PlannedArtifact[] = [];
  const notOffered: string[] = [];
  for (const product of cfg.products) {
    for (const country of cfg.countries) {
      const names =
        product === 'post' ? cfg.levels.map((l) => `${country}_${l}.zip`) : product === 'autocompletion' ? [`AC_${country}.zip`] : [`PHONE_${country}.zip`];
      for (const artifact of names) {
        const bad = validateDataPath({ product, country, release: cfg.release, version: '2000-01-01', artifact });
        if (bad.length === 0) planned.push({ product, country, artifact });
        else if (!notOffered.includes(`${product}/${country}`)) notOffered.push(`${product}/${country}`);
      }
    }
  }
  return { planned, notOffered };
}

const now = (): string => new Date().toISOString();

function entry(target: string, r: DownloadResult, source: string, verified: boolean): ManifestFile {
  return { path: relative(target, r.path), source, size: r.size, sha512: r.sha512, fetchedAt: now(), verified };
}

/** A name as a warning shows it: JSON-quoted, with invisible and direction-changing characters as `\uXXXX`. */
export function printableName(name: string): string {
  return JSON.stringify(name).replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`);
}

/**
 * Whether the file at `rel` holds the content the server's checksum names. The manifest is not
 * trusted for this: the file is hashed now, so a file altered or damaged on disk (even at the same
 * size) is found and fetched again, with a warning. False when there is no checksum or no file.
 */
async function contentMatches(target: string, rel: string, sha512: string | undefined, s: State, signal?: AbortSignal): Promise<boolean> {
  if (sha512 === undefined) return false;
  const onDisk = await sha512OfFile(target, rel, signal);
  if (onDisk === undefined) return false;
  if (onDisk === sha512) return true;
  s.warnings.push(
    `${rel} on disk does not match the server's checksum (SHA-512 ${onDisk.slice(0, 16)}…, expected ${sha512.slice(0, 16)}…): downloading it again`,
  );
  return false;
}

/**
 * Runs one sync. Never throws for platform or file failures: they end up in the summary (`status:
 * failed`) and in `error`, from which the CLI derives the exit code.
 */
export async function runSync(cfg: SyncConfig, deps: SyncDeps = {}): Promise<{ summary: SyncSummary; error?: unknown }> {
  const started = performance.now(); // durations on the monotonic clock
  const logger = deps.logger ?? createSilentLogger();
  const { signal } = deps;
  const { target } = cfg;
  const { planned, notOffered } = planArtifacts(cfg);
  const s: State = {
    command: 'sync',
    status: 'up-to-date',
    version: undefined,
    previous: undefined,
    downloaded: [],
    resumed: [],
    alreadyVerified: 0,
    notOffered,
    installer: undefined,
    removedVersions: [],
    failures: [],
    warnings: [],
    durationMs: 0,
  };
  let error: unknown;
  if (planned.length === 0) {
    // Nothing would be fetched: syncing would switch `current` to an empty version and report success.
    const e = new UsageError(`nothing to download: the contract offers none of ${notOffered.join(', ')}; check --products and --countries`);
    return { summary: { ...s, status: 'failed', durationMs: Math.round(performance.now() - started) }, error: e };
  }
  let lock;
  try {
    await makeTarget(target);
    await checkLockFile(target);
    lock = await writingTo(join(target, LOCK_FILE), () => acquireLock(target, cfg.lockWaitSeconds, signal));
  } catch (e) {
    const stopped = signal?.aborted && (e as { code?: unknown }).code === 'interrupted';
    return { summary: { ...s, status: 'failed', durationMs: Math.round(performance.now() - started) }, error: stopped ? interrupted(signal, e) : e };
  }
  if (lock.tookOver) s.warnings.push('took over the lock of a sync that is no longer running');
  const client = new DownloadClient({ downloadUrl: cfg.downloadUrl, apiKey: cfg.apiKey, timeoutMs: cfg.timeoutMs, logger });
  try {
    const manifest = await readManifest(target);
    s.previous = (await readCurrent(target)) ?? undefined;
    const { version } = await client.fetchVersion({ signal });
    s.version = version;
    // Where the last sync left current (the manifest), else where current points.
    const inUse = manifest.current ?? s.previous;
    if (inUse !== undefined && /^\d{4}-\d{2}-01$/.test(inUse) && version < inUse) {
      // The server went back (a version withdrawn): its version.txt is what the target follows.
      s.warnings.push(
        `version.txt announces ${version}, older than ${inUse} which current pointed to (the server went back a version): ${version} is synced and current points to it once it is complete; ${inUse} stays until --keep removes it`,
      );
    }
    let v = manifest.versions[version];
    if (v !== undefined && v.release !== cfg.release && (v.completedAt !== null || manifest.current === version)) {
      // Version directories are named by version alone: another release would replace these files
      // in place, one by one, and a sync that stops leaves a mix of both releases (under
      // `current`, when it points here). See "What a sync does" in the README.
      const inUse = manifest.current === version ? ', which current points to' : ' (complete)';
      throw new UsageError(
        `${target} holds version ${version} of ${v.release}${inUse}; syncing ${cfg.release} into it would replace its files one by one, a mix of both releases if it stops: give ${cfg.release} its own --target (or keep --release ${v.release})`,
      );
    }
    if (v === undefined || v.release !== cfg.release) {
      v = { release: cfg.release, completedAt: null, versionFetchedAt: now(), installer: null, files: [] };
      manifest.versions[version] = v;
    }
    v.versionFetchedAt = now();
    await syncInstaller(client, cfg, manifest, v, version, s, signal);
    for (const a of planned) {
      await syncArtifact(client, cfg, manifest, v, version, a, s, signal);
    }
    for (const spec of cfg.software) {
      await syncSoftware(client, cfg, manifest, spec, s, signal);
    }
    if (s.failures.length === 0) {
      if (v.completedAt === null || s.downloaded.some((p) => p.startsWith(`${version}/`))) v.completedAt = now();
      if (manifest.current !== version || s.previous !== version) {
        await writingTo(join(target, 'current'), () => switchCurrent(target, version));
        // Not after a crash between the switch and the manifest's write: current is right then.
        if (manifest.current !== null && s.previous !== undefined && s.previous !== manifest.current && s.previous !== version) {
          s.warnings.push(
            `current pointed to ${s.previous}, not to ${manifest.current} where the last sync left it (changed by hand?); it points to ${version} again: to keep another version in use, stop the scheduled sync of this target`,
          );
        }
        manifest.current = version;
      }
      s.removedVersions = await pruneVersions(target, manifest, cfg.keep, s);
    }
    await writeManifest(target, manifest);
  } catch (e) {
    error = e;
  } finally {
    await client.close();
    await lock.release();
  }
  if (error === undefined && s.failures.length > 0) error = s.failures[0]?.cause;
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (signal?.aborted && (code === 'aborted' || code === 'interrupted')) error = interrupted(signal, error);
  const changed = s.downloaded.length > 0 || s.removedVersions.length > 0 || s.previous !== s.version || s.installer?.changed === true;
  s.status = error !== undefined ? 'failed' : changed ? 'updated' : 'up-to-date';
  s.durationMs = Math.round(performance.now() - started);
  const summary = { ...s, failures: s.failures.map(({ source, code, message }) => ({ source, code, message })) };
  return error === undefined ? { summary } : { summary, error };
}

type Failure = SyncSummary['failures'][number] & { cause?: unknown };
type State = SyncSummary & { failures: Failure[] };

/** The failure of a file the download server answered 404 for, with `message` saying what to check. */
function notOnServer(source: string, message: string, e: PlatformError): Failure {
  const cause = new PlatformError(message, {
    code: e.code,
    retriable: false,
    status: 404,
    ...(e.requestId ? { requestId: e.requestId } : {}),
    cause: e,
  });
  return { source, code: e.code, message, cause };
}

async function syncInstaller(client: DownloadClient, cfg: SyncConfig, manifest: Manifest, v: ManifestVersion, version: string, s: State, signal?: AbortSignal) {
  // The platform's rules: its installer is fetched each time reference data is downloaded, like version.txt.
  const destDir = join(cfg.target, version, 'installer');
  const name = installerFor(cfg.platform);
  await checkDownloadDir(cfg.target, `${version}/installer`);
  let r: DownloadResult;
  try {
    r = await writingTo(join(destDir, name), () => client.downloadInstaller(name, { destDir, ...(signal ? { signal } : {}) }));
  } catch (e) {
    if (!(e instanceof PlatformError && e.status === 404)) throw e;
    // Like a subscribed artifact the server lacks: named with the setting to check, and the data
    // files are still fetched; the version stays incomplete (README "Exit codes").
    const source = installerPath(name);
    const asked = source.ok ? source.value : name;
    const message = `the installer ${name} of version ${version} (--platform ${cfg.platform}) is not on the download server (HTTP 404 for ${asked}): check --platform against the installers the download server offers (report it if it persists); the data files are still fetched, but current is not switched to a version until its installer is placed [request id ${e.requestId ?? 'none'}]`;
    s.failures.push(notOnServer(asked, message, e));
    return;
  }
  const changed = v.installer?.sha512 !== r.sha512;
  v.installer = entry(cfg.target, r, `/download/v1/data/post/${r.fileName}`, false);
  s.installer = { path: v.installer.path, changed };
  await writeManifest(cfg.target, manifest);
}

async function syncArtifact(
  client: DownloadClient,
  cfg: SyncConfig,
  manifest: Manifest,
  v: ManifestVersion,
  version: string,
  a: PlannedArtifact,
  s: State,
  signal?: AbortSignal,
) {
  const p = dataPath({ ...a, release: cfg.release, version });
  if (!p.ok) return; // planArtifacts only keeps valid combinations
  const source = p.value;
  const rel = `${version}/${a.product}/${a.country}/${a.artifact}`;
  let asked = `${source}.sha512`;
  try {
    const { sha512 } = await client.fetchChecksum(source, { signal });
    if (await contentMatches(cfg.target, rel, sha512, s, signal)) {
      s.alreadyVerified++;
      const known = v.files.find((f) => f.path === rel);
      if (known === undefined || known.sha512 !== sha512 || !known.verified) {
        // On disk and correct but not (or wrongly) recorded, e.g. after the manifest was lost: record it.
        const size = (await sizeOf(cfg.target, rel)) ?? 0;
        upsertFile(v.files, { path: rel, source, size, sha512, fetchedAt: known?.fetchedAt ?? now(), verified: true });
        await writeManifest(cfg.target, manifest);
      }
      return;
    }
    asked = source;
    // The file goes where its folders are: never through a link to somewhere outside the target.
    await checkDownloadDir(cfg.target, dirname(rel));
    if (v.completedAt !== null && v.files.some((f) => f.path === rel)) {
      // A file of a complete version is replaced in place (the server changed it, or it changed on
      // disk): until every file matches again the version is a mix, not complete, so verify and
      // status do not call it complete if this sync stops half-way.
      v.completedAt = null;
      await writeManifest(cfg.target, manifest);
    }
    const r = await writingTo(join(cfg.target, rel), () =>
      client.download(source, {
        destDir: join(cfg.target, dirname(rel)),
        fileName: a.artifact,
        expectedSha512: sha512,
        ...(signal ? { signal } : {}),
      }),
    );
    upsertFile(v.files, entry(cfg.target, r, source, true));
    s.downloaded.push(rel);
    if (r.resumedFrom > 0) s.resumed.push(rel);
    await writeManifest(cfg.target, manifest);
  } catch (e) {
    // A bad or missing file spoils only this version's completeness; the other files still get placed.
    const code = (e as { code?: unknown }).code;
    if (code === 'checksum-mismatch') {
      s.failures.push({ source, code, message: (e as Error).message, cause: e });
      return;
    }
    if (code === 'checksum-file-invalid') {
      // Like a mismatch, a fault of this one file on the server (or of a proxy's page in its place).
      const message = `${(e as Error).message}; the file was not placed: sync again later, and report it if it persists`;
      s.failures.push({ source, code, message, cause: new DqError(message, { code, retriable: false, cause: e }) });
      return;
    }
    if (e instanceof PlatformError && e.status === 404) {
      // version.txt came from the same host, so it is the subscription, not the base URL (the
      // transport's advice for a 404).
      const message = `${a.product}/${a.country}/${a.artifact} of version ${version} is not on the download server (HTTP 404 for ${asked}): check --products, --countries and --levels against what the platform offers; the version stays incomplete and current is not switched [request id ${e.requestId ?? 'none'}]`;
      s.failures.push(notOnServer(source, message, e));
      return;
    }
    throw e;
  }
}

/** A software package as `--software` names it: `software-bundle:linux`, `software-bundle:linux:user-manuals.zip`. */
function softwareLabel(spec: SyncConfig['software'][number]): string {
  return [spec.product, ...(spec.platform === undefined ? [] : [spec.platform]), ...(spec.artifact === `${spec.product}.zip` ? [] : [spec.artifact])].join(':');
}

async function syncSoftware(client: DownloadClient, cfg: SyncConfig, manifest: Manifest, spec: SyncConfig['software'][number], s: State, signal?: AbortSignal) {
  const p = softwarePath(spec);
  if (!p.ok) return; // refused when the config was read
  const source = p.value;
  // The checksum artifact is used when the platform offers one for the package.
  const sha512 = await client.fetchChecksum(source, { signal }).then(
    (c) => c.sha512,
    (e: unknown) => {
      if (e instanceof PlatformError && e.status === 404) return undefined;
      throw e;
    },
  );
  const known = manifest.software.find((f) => f.source === source);
  if (known !== undefined && known.sha512 === sha512 && (await contentMatches(cfg.target, known.path, sha512, s, signal))) {
    s.alreadyVerified++;
    return;
  }
  const destDir = join(cfg.target, 'software', spec.product, spec.platform ?? 'any');
  await checkDownloadDir(cfg.target, relative(cfg.target, destDir));
  // Packages are named by the server: two of this sync's packages given one name would replace
  // each other on every run, so the second is refused before it replaces the first.
  const others = new Map<string, string>();
  for (const o of cfg.software) {
    const q = softwarePath(o);
    if (q.ok && q.value !== source) others.set(q.value, softwareLabel(o));
  }
  let clash: UsageError | undefined;
  const beforePlace = (name: string) => {
    const rel = relative(cfg.target, join(destDir, name));
    const owner = manifest.software.find((f) => f.path === rel && f.source !== source && others.has(f.source));
    if (owner === undefined) return;
    const label = softwareLabel(spec);
    clash = new UsageError(
      `${label} and ${others.get(owner.source) ?? owner.source} are both named ${printableName(name)} by the download server (Content-Disposition), in ${dirname(rel)}/: one would replace the other, so ${label} was not placed; list only one of them in --software (or sync the other into its own --target)`,
    );
    throw clash;
  };
  let r: DownloadResult;
  try {
    r = await writingTo(destDir, () =>
      client.download(source, { destDir, beforePlace, ...(sha512 ? { expectedSha512: sha512 } : {}), ...(signal ? { signal } : {}) }),
    );
  } catch (e) {
    if (e !== clash || clash === undefined) throw e;
    s.failures.push({ source, code: clash.code, message: clash.message, cause: clash });
    return;
  }
  if (r.unsafeServerName !== undefined)
    s.warnings.push(`unsafe file name ${printableName(r.unsafeServerName)} from ${source} saved as ${printableName(r.fileName)}`);
  const placed = entry(cfg.target, r, source, sha512 !== undefined);
  // The old file goes unless another package's entry names it (the manifest of an earlier version of this tool).
  if (known !== undefined && known.path !== placed.path && !manifest.software.some((f) => f.source !== source && f.path === known.path)) {
    await removeOldPackage(cfg.target, manifest, known.path, s);
  }
  // A package no longer synced whose file this one replaced is no longer on disk.
  manifest.software = manifest.software.filter((f) => f.source !== source && f.path !== placed.path);
  manifest.software.push(placed);
  s.downloaded.push(placed.path);
  if (r.resumedFrom > 0) s.resumed.push(placed.path);
  await writeManifest(cfg.target, manifest);
}

/**
 * Removes the file a software package was placed as before the server renamed it. Only a file under
 * `software/` that no version lists is removed, never through a link on the way: a hand-edited
 * entry naming a data file (or a link) would otherwise delete what a version holds (README "What a
 * sync does", step 5); such a file is kept, with a warning.
 */
async function removeOldPackage(target: string, manifest: Manifest, rel: string, s: State): Promise<void> {
  const inVersion = Object.values(manifest.versions).some((v) => v.installer?.path === rel || v.files.some((f) => f.path === rel));
  const why = !rel.startsWith('software/')
    ? 'it is not under software/'
    : inVersion
      ? 'a version lists it as its own'
      : await checkFoldersInside(target, rel).then(
          () => undefined,
          (e: unknown) => {
            if (e instanceof NotOursError) return `${e.rel} on its way is ${e.found}`;
            throw e;
          },
        );
  if (why === undefined) {
    await writingTo(join(target, rel), () => rm(join(target, rel), { force: true }));
    return;
  }
  s.warnings.push(`the manifest named ${rel} as an earlier file of a software package, but ${why}: it was not removed; check manifest.json (edited by hand?)`);
}

/**
 * Checks the folder `relDir` of the target before a download writes into it: every folder on the
 * way a real folder, never a link that leads outside the target. (A link or a named pipe under a
 * download part's name is the download client's to remove: it never writes through one.)
 */
async function checkDownloadDir(target: string, relDir: string): Promise<void> {
  await checkFoldersInside(target, relDir, true);
}

/**
 * Refuses a lock file that is not a regular file (a named pipe, a link, a folder put there): the
 * lock is read to judge its owner, and such a read would block or lead outside the target.
 */
async function checkLockFile(target: string): Promise<void> {
  const path = join(target, LOCK_FILE);
  const st = await lstat(path).catch(() => undefined);
  if (st === undefined || st.isFile()) return;
  throw new NotOursError(path, LOCK_FILE, await describe(path, st), 'file');
}

/**
 * Creates the target directory; a target that is a file, or lies under one, or a symbolic link to
 * nothing is a usage error.
 */
async function makeTarget(target: string): Promise<void> {
  try {
    await mkdir(target, { recursive: true }).catch((e: unknown) => {
      throw targetFileError(target, e) ?? e;
    });
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code !== 'ENOENT' && code !== 'EEXIST' && code !== 'ENOTDIR') throw e;
    // A recursive mkdir says ENOENT (or ENOTDIR) both for a symbolic link to something missing (a
    // file system not mounted) and for a folder it may not create (read-only): look at the first
    // missing folder of the path, and make it alone for the real error.
    let missing = resolve(target);
    while (dirname(missing) !== missing && (await stat(dirname(missing)).catch(() => undefined)) === undefined) missing = dirname(missing);
    const link = await readlink(missing).catch(() => undefined);
    if (link !== undefined) {
      throw new UsageError(
        `--target ${target}: ${missing} is a symbolic link to ${link}, which does not exist (a file system not mounted?); mount or create it, or give another --target`,
      );
    }
    if (code === 'ENOENT')
      throw await mkdir(missing).then(
        () => e,
        (e2: unknown) => targetFileError(missing, e2) ?? e,
      );
    const why = code === 'EEXIST' ? 'it is a file' : 'a part of its path is a file';
    throw new UsageError(`--target ${target} cannot be a directory: ${why}; give the directory dq-refdata sync fills (it is created if missing)`);
  }
}

/**
 * Removes complete versions beyond the newest `keep`, and unfinished ones older than the current
 * version (never the current one); returns them. Only what the manifest says sync placed for a
 * version (its files, its installer, download parts) is deleted, and its folders once empty: a file
 * a person put in a version folder is kept, with a warning (README "What a sync does", step 6).
 */
async function pruneVersions(target: string, manifest: Manifest, keep: number, s: State): Promise<string[]> {
  const all = Object.keys(manifest.versions).sort().reverse();
  // The version in use counts first among the kept: after the server went back a version, a newer
  // one is not kept beside it beyond --keep.
  const complete = all
    .filter((ver) => manifest.versions[ver]?.completedAt !== null)
    .sort((a, b) => (a === manifest.current ? -1 : b === manifest.current ? 1 : 0));
  const unfinishedOld = all.filter((ver) => manifest.versions[ver]?.completedAt === null && manifest.current !== null && ver < manifest.current);
  const removed: string[] = [];
  for (const ver of [...complete.slice(keep), ...unfinishedOld]) {
    if (ver === manifest.current) continue;
    const v = manifest.versions[ver];
    const placed = [...(v?.files ?? []), ...(v?.installer ? [v.installer] : [])].map((f) => f.path).filter((p) => p.startsWith(`${ver}/`));
    const left = await removePlaced(join(target, ver), new Set(placed.map((p) => join(target, p))));
    if (left.length > 0) {
      const shown = left.slice(0, 5).map((p) => relative(target, p));
      s.warnings.push(
        `--keep removed version ${ver} but kept ${left.length} file(s) in ${join(target, ver)} that dq-refdata did not place (${shown.join(', ')}${left.length > shown.length ? ', …' : ''}); move them away, and remove the folder`,
      );
    }
    delete manifest.versions[ver];
    removed.push(ver);
  }
  return removed;
}

/** A download's part or its sidecar, as the download client names them while a file comes in. */
const PART_FILE = /^\.dq-download-[0-9a-f]{16}\.part(\.json)?$/;

/**
 * Deletes the files of `placed` (and download parts) under `dir`, then every folder left empty,
 * `dir` included; never follows a symbolic link. Returns the paths of the other files, kept.
 */
async function removePlaced(dir: string, placed: ReadonlySet<string>): Promise<string[]> {
  const st = await lstat(dir).catch(() => undefined);
  if (st === undefined) return [];
  if (!st.isDirectory()) return [dir]; // a symbolic link put in place of a version folder: not followed
  const entries = await readdir(dir, { withFileTypes: true });
  const kept: string[] = [];
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) kept.push(...(await removePlaced(path, placed)));
    else if (placed.has(path) || PART_FILE.test(e.name)) await writingTo(path, () => rm(path, { force: true }));
    else kept.push(path);
  }
  if (kept.length === 0) {
    await rmdir(dir).catch((e: unknown) => {
      // Something appeared meanwhile, or it was never there: nothing of sync's is lost by keeping it.
      const code = (e as { code?: unknown }).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw targetFileError(dir, e) ?? e;
    });
  }
  return kept;
}
