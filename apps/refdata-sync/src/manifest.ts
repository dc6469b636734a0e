/**
 * `manifest.json` of a target: what each version directory holds (file, size, SHA-512, fetch time),
 * which installer came with it, whether it is complete, and which version is current. Written
 * atomically (temporary file, fsync, rename) after every placed file, so an interrupted sync
 * loses nothing it verified.
 */
import { open, rename, rm } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { openInside, readError } from './fs-sync.js';
import { writingTo } from './target-fs.js';

/** A version directory's name, as version.txt announces it. */
const VERSION = /^\d{4}-(0[1-9]|1[0-2])-01$/;

/** Name of the manifest inside the target directory. */
export const MANIFEST_FILE = 'manifest.json';

/** The manifest format this version reads and writes. */
export const MANIFEST_SCHEMA = 1;

/**
 * Largest manifest read: far more than any subscription's (an entry is about 400 bytes), and
 * little enough to hold in memory; a larger file is no manifest this tool wrote.
 */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

const fileEntry = z.object({
  /** Path relative to the target, e.g. `2026-11-01/post/DE/DE_001.zip`. */
  path: z.string(),
  /** Download URL path it came from. */
  source: z.string(),
  size: z.number().int().nonnegative(),
  sha512: z.string().regex(/^[0-9a-f]{128}$/),
  /** ISO time the file was placed. */
  fetchedAt: z.string(),
  /** Whether the digest was checked against the server's `.sha512` (false: recorded only). */
  verified: z.boolean(),
});
export type ManifestFile = z.infer<typeof fileEntry>;

const versionEntry = z.object({
  release: z.string(),
  /** Set once every subscribed artifact of this version is placed and verified. */
  completedAt: z.string().nullable(),
  /** When version.txt announced this version (the latest fetch). */
  versionFetchedAt: z.string(),
  installer: fileEntry.nullable(),
  files: z.array(fileEntry),
});
export type ManifestVersion = z.infer<typeof versionEntry>;

/** A target-relative path that stays inside the target: no absolute path, no `..` segment. */
const insideTarget = (path: string): boolean => path !== '' && !isAbsolute(path) && !path.split(/[/\\]/).includes('..');

const manifestSchema = z
  .object({
    schema: z.literal(MANIFEST_SCHEMA),
    /** The version `current` points to, or null before the first complete sync. */
    current: z.string().nullable(),
    versions: z.record(z.string(), versionEntry),
    /** Software packages, not tied to a data version. */
    software: z.array(fileEntry),
  })
  .superRefine((m, ctx) => {
    // Version keys and paths name what sync replaces and --keep removes: a hand-edited one must
    // never point outside the target. One path listed twice would be checked against two digests
    // (verify fails for ever over a file sync counts as up to date).
    const seen = new Set<string>();
    const check = (where: string, path: string) => {
      if (!insideTarget(path)) ctx.addIssue({ code: 'custom', message: `${where}: path ${JSON.stringify(path)} leads outside the target` });
      else if (seen.has(path)) ctx.addIssue({ code: 'custom', message: `${where}: path ${JSON.stringify(path)} is listed twice` });
      seen.add(path);
    };
    if (m.current !== null && !VERSION.test(m.current))
      ctx.addIssue({ code: 'custom', message: `current: ${JSON.stringify(m.current)} is no version (yyyy-mm-01)` });
    for (const [version, v] of Object.entries(m.versions)) {
      if (!VERSION.test(version)) ctx.addIssue({ code: 'custom', message: `versions: ${JSON.stringify(version)} is no version (yyyy-mm-01)` });
      for (const f of [...v.files, ...(v.installer ? [v.installer] : [])]) check(`versions.${version}`, f.path);
    }
    for (const f of m.software) check('software', f.path);
  });
export type Manifest = z.infer<typeof manifestSchema>;

/** An empty manifest. */
export function emptyManifest(): Manifest {
  return { schema: 1, current: null, versions: {}, software: [] };
}

/**
 * Reads the manifest of `target`; an absent one is empty. One that is not a dq-refdata manifest of
 * this format (not JSON, another shape, too large, of another format) is an error naming the file;
 * anything but a regular file at its place (a folder, a link, a named pipe) a usage error naming it,
 * never followed or read.
 */
export async function readManifest(target: string): Promise<Manifest> {
  const path = join(target, MANIFEST_FILE);
  const opened = await openInside(target, MANIFEST_FILE);
  if (opened === undefined) return emptyManifest();
  const afresh = 'move it away to start afresh (reference-data files on disk that match the server checksums are kept, not downloaded again)';
  let text: string;
  try {
    if (opened.size > MAX_MANIFEST_BYTES) {
      throw new Error(`${path} is not a dq-refdata manifest (${opened.size} bytes, more than the ${MAX_MANIFEST_BYTES} a manifest may hold); ${afresh}`);
    }
    text = await opened.fh.readFile('utf8').catch((e: unknown) => {
      throw readError(path, e);
    });
  } finally {
    await opened.fh.close();
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    // Cut short or hand-edited: name the file, not just a position in some JSON.
    throw new Error(`${path} is not a dq-refdata manifest (not JSON: ${(e as Error).message}); ${afresh}`, { cause: e });
  }
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (typeof schema === 'number' && schema !== MANIFEST_SCHEMA) {
    // Another version of this tool wrote it: starting afresh would throw its records away.
    const which = schema > MANIFEST_SCHEMA ? 'a newer' : 'an older';
    throw new Error(
      `${path} is of manifest format ${schema}, written by ${which} version of dq-refdata; this one reads format ${MANIFEST_SCHEMA}: run the dq-refdata that wrote it on this target (or give this one another --target)`,
    );
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.code === 'custom' || issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
    throw new Error(`${path} is not a dq-refdata manifest (${where}${issue?.message ?? 'invalid'}); ${afresh}`);
  }
  return parsed.data;
}

/** Writes the manifest atomically: a crash leaves the old or the new one, never half of one. */
export async function writeManifest(target: string, manifest: Manifest): Promise<void> {
  const path = join(target, MANIFEST_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  await writingTo(path, async () => {
    try {
      // Created afresh, never opened through whatever a leftover of that name is (a link).
      await rm(tmp, { force: true });
      const fh = await open(tmp, 'wx');
      try {
        await fh.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
    } catch (e) {
      // A full disk must not leave a half-written temporary manifest behind.
      await rm(tmp, { force: true });
      throw e;
    }
  });
}

/** Replaces or adds `entry` (matched by path) in `list`. */
export function upsertFile(list: ManifestFile[], entry: ManifestFile): void {
  const i = list.findIndex((f) => f.path === entry.path);
  if (i === -1) list.push(entry);
  else list[i] = entry;
}
