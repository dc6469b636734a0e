/**
 * `dq-refdata verify` (re-hash every file the manifest lists and check `current`) and
 * `dq-refdata status` (what the target holds, without reading file contents).
 */
import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { lockOwnerAlive, type FileLockOwner } from '@dq/core/lock';
import { readCurrent } from './current-pointer.js';
import { InterruptedError, UsageError } from './errors.js';
import { NotOursError, openInside, sha512OfHandle } from './fs-sync.js';
import { LOCK_FILE } from './lock.js';
import { MANIFEST_FILE, readManifest, type ManifestFile } from './manifest.js';
import { stoppedBy } from './target-fs.js';

/** Outcome of {@link verifyTarget}; `ok` is false when the manifest is missing or any file is missing or differs. */
export interface VerifySummary {
  command: 'verify';
  ok: boolean;
  current: string | undefined;
  /** Files re-hashed. */
  checked: number;
  /**
   * The pid of a sync of this target that held its lock when verify began or ended, set only when
   * problems were found: that sync was placing, pruning or switching files meanwhile, so what verify
   * found may be its work in progress (exit 75: run verify again once it ends).
   */
  syncRunning?: number;
  bytes: number;
  problems: Array<{
    path: string;
    /** `not-a-file`: a symbolic link, folder, named pipe or device where the file belongs (not followed, not read). */
    problem: 'manifest-missing' | 'missing' | 'size-differs' | 'digest-differs' | 'not-a-file' | 'current-pointer';
    detail: string;
  }>;
}

/** Throws a {@link UsageError} (exit 2) when `target` does not exist or is not a directory. */
async function requireTargetDir(target: string, consequence: string): Promise<void> {
  const kind = await stat(target).then(
    (st) => (st.isDirectory() ? 'dir' : 'other'),
    () => 'none',
  );
  if (kind !== 'dir') {
    throw new UsageError(
      `--target ${target} ${kind === 'none' ? 'does not exist' : 'is not a directory'}: ${consequence}; check the path (a target is the directory dq-refdata sync writes)`,
    );
  }
}

/**
 * Re-hashes every file in the manifest (all versions, installers, software) and checks `current`.
 * A target that is not a directory is a usage error (exit 2); a target without a manifest fails
 * verification: nothing says what its files should hold. An abort of `signal` stops it at once
 * with an {@link InterruptedError} (exit 75).
 */
export async function verifyTarget(target: string, signal?: AbortSignal): Promise<VerifySummary> {
  await requireTargetDir(target, 'nothing to verify');
  if ((await lstat(join(target, MANIFEST_FILE)).catch(() => undefined)) === undefined) {
    const detail = `no ${MANIFEST_FILE} in ${target}, so nothing says what its files should hold; run dq-refdata sync on it (files on disk that match the server's checksums are kept, not downloaded again)`;
    return {
      command: 'verify',
      ok: false,
      current: await readCurrent(target),
      checked: 0,
      bytes: 0,
      problems: [{ path: MANIFEST_FILE, problem: 'manifest-missing', detail }],
    };
  }
  const before = await runningSync(target);
  const manifest = await readManifest(target);
  const files: ManifestFile[] = [...Object.values(manifest.versions).flatMap((v) => [...v.files, ...(v.installer ? [v.installer] : [])]), ...manifest.software];
  const out: VerifySummary = { command: 'verify', ok: true, current: await readCurrent(target), checked: 0, bytes: 0, problems: [] };
  for (const f of files) {
    let opened;
    try {
      opened = await openInside(target, f.path);
    } catch (e) {
      // A link is not followed (it may lead outside the target), a pipe or device never read.
      if (!(e instanceof NotOursError)) throw e;
      const what = e.rel === f.path ? `${e.found}, not the file dq-refdata placed` : `${e.rel} on its way is ${e.found}, not a folder`;
      out.problems.push({ path: f.path, problem: 'not-a-file', detail: `${what}; not followed or read: move ${e.rel} away` });
      continue;
    }
    if (opened === undefined) {
      out.problems.push({ path: f.path, problem: 'missing', detail: 'listed in the manifest but not on disk' });
      continue;
    }
    const { fh, size } = opened;
    let digest: string;
    try {
      if (size !== f.size) {
        out.problems.push({ path: f.path, problem: 'size-differs', detail: `manifest ${f.size} bytes, disk ${size}` });
        continue;
      }
      digest = await sha512OfHandle(fh, join(target, f.path), signal).catch((e: unknown) => {
        if (signal?.aborted) throw new InterruptedError(`verify interrupted ${stoppedBy(signal, e)}; nothing was changed: run dq-refdata verify again`, e);
        throw e;
      });
    } finally {
      await fh.close();
    }
    out.checked++;
    out.bytes += size;
    if (digest !== f.sha512) out.problems.push({ path: f.path, problem: 'digest-differs', detail: `manifest ${f.sha512}, disk ${digest}` });
  }
  if (manifest.current === null && out.current === undefined) {
    // A sync that never completed a version (a file missing on the server, a full disk) leaves
    // files to check but nothing to use: passing would tell a health check the data is ready.
    out.problems.push({
      path: 'current',
      problem: 'current-pointer',
      detail: `missing: no version of this target is complete yet, so it holds nothing to use; run dq-refdata sync until it completes one (files whose content matches the server's checksums are kept, not downloaded again)`,
    });
  } else if (manifest.current !== null && out.current !== manifest.current) {
    out.problems.push({ path: 'current', problem: 'current-pointer', detail: await pointerDetail(target, out.current, manifest.current) });
  } else if (out.current !== undefined && manifest.versions[out.current]?.completedAt == null) {
    // A version the manifest does not list (or lists as unfinished) has nothing to check its files against.
    const what =
      manifest.versions[out.current] === undefined
        ? `which ${MANIFEST_FILE} does not list: none of its files can be checked`
        : `which ${MANIFEST_FILE} lists as not complete: a sync found files of it that no longer match the server's and has not replaced them all yet`;
    out.problems.push({
      path: 'current',
      problem: 'current-pointer',
      detail: `points to ${out.current}, ${what}; run dq-refdata sync (files whose content matches the server's checksums are kept, not downloaded again)`,
    });
  }
  out.ok = out.problems.length === 0;
  if (!out.ok) {
    const running = before ?? (await runningSync(target));
    if (running !== undefined) out.syncRunning = running;
  }
  return out;
}

/**
 * Why `current` is not the link to `expected` the manifest names, and what to do (README "Target
 * layout"): a folder or file put where the link belongs is named as such (it is no pointer, sync
 * leaves it alone), a link pointed elsewhere is put back by the next sync.
 */
async function pointerDetail(target: string, points: string | undefined, expected: string): Promise<string> {
  const link = join(target, 'current');
  const st = points === undefined ? await lstat(link).catch(() => undefined) : undefined;
  if (st !== undefined && !st.isSymbolicLink()) {
    return `${link} is ${st.isDirectory() ? 'a folder' : 'a file'}, not the symbolic link dq-refdata keeps there (the manifest says ${expected} is in use); move it away, then run dq-refdata sync: it points current to ${expected} again (the files placed are kept)`;
  }
  const now = points === undefined ? 'is missing' : `points to ${points}`;
  return `${now}, manifest says ${expected}; run dq-refdata sync: it points current to ${expected} again (to keep another version in use, stop the scheduled sync of this target)`;
}

/** The pid of the sync holding the lock of `target`, or undefined when none does. */
async function runningSync(target: string): Promise<number | undefined> {
  try {
    // Read as sync reads the target: a pipe or link put there is not read (the read would block).
    const opened = await openInside(target, LOCK_FILE);
    if (opened === undefined) return undefined;
    let text: string;
    try {
      text = opened.size > 64 * 1024 ? '' : await opened.fh.readFile('utf8');
    } finally {
      await opened.fh.close();
    }
    const owner = JSON.parse(text) as Partial<FileLockOwner>;
    const refreshedAtMs = (await stat(join(target, LOCK_FILE))).mtimeMs;
    // The lock of a process of this host that is gone (killed, or its pid given to another since)
    // names no running sync; the next sync takes it over. Judged as the lock itself judges it.
    return typeof owner.pid === 'number' && typeof owner.host === 'string' && lockOwnerAlive({ ...owner, pid: owner.pid, host: owner.host, refreshedAtMs })
      ? owner.pid
      : undefined;
  } catch {
    return undefined;
  }
}

/** Outcome of {@link targetStatus}. */
export interface StatusSummary {
  command: 'status';
  current: string | undefined;
  versions: Array<{ version: string; release: string; complete: boolean; completedAt: string | null; files: number; bytes: number; installer: string | null }>;
  software: Array<{ path: string; size: number; fetchedAt: string }>;
  /** pid of the sync holding the lock, if any (a lock left by a process of this host that is gone is none). */
  lockedBy: number | undefined;
}

/** Describes the target from its manifest, pointer and lock file. */
export async function targetStatus(target: string): Promise<StatusSummary> {
  await requireTargetDir(target, 'nothing to describe');
  const manifest = await readManifest(target);
  const lockedBy = await runningSync(target);
  return {
    command: 'status',
    current: await readCurrent(target),
    versions: Object.entries(manifest.versions)
      .sort(([a], [b]) => (a < b ? 1 : -1))
      .map(([version, v]) => ({
        version,
        release: v.release,
        complete: v.completedAt !== null,
        completedAt: v.completedAt,
        files: v.files.length,
        bytes: v.files.reduce((n, f) => n + f.size, 0),
        installer: v.installer?.path ?? null,
      })),
    software: manifest.software.map((f) => ({ path: f.path, size: f.size, fetchedAt: f.fetchedAt })),
    lockedBy,
  };
}
