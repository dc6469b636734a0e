/**
 * `manifest.json` of a target: what each version directory holds (file, size, SHA-512, fetch time),
 * which installer came with it, whether it is complete, and which version is current. Written
 * atomically (temporary file, fsync, rename) after every placed file, so an interrupted sync
 * loses nothing it verified.
 */
import { open, readFile, rename, rm } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { writingTo } from './target-fs.js';

/** A version directory's name, as version.txt announces it. */
const VERSION = /^\d{4}-(0[1-9]|1[0-2])-01$/;

/** Name of the manifest inside the target directory. */
export const MANIFEST_FILE = 'manifest.json';

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
    schema: z.literal(1),
    /** The version `current` points to, or null before the first complete sync. */
    current: z.string().nullable(),
    versions: z.record(z.string(), versionEntry),
    /** Software packages, not tied to a data version. */
    software: z.array(fileEntry),
  })
  .superRefine((m, ctx) => {
    // Version keys and paths name what sync replaces and --keep removes: a hand-edited one must
    // never point outside the target.
    for (const [version, v] of Object.entries(m.versions)) {
      if (!VERSION.test(version)) ctx.addIssue({ code: 'custom', message: `versions: ${JSON.stringify(version)} is no version (yyyy-mm-01)` });
      for (const f of [...v.files, ...(v.installer ? [v.installer] : [])]) {
        if (!insideTarget(f.path)) ctx.addIssue({ code: 'custom', message: `versions.${version}: path ${JSON.stringify(f.path)} leads outside the target` });
      }
    }
    for (const f of m.software) {
      if (!insideTarget(f.path)) ctx.addIssue({ code: 'custom', message: `software: path ${JSON.stringify(f.path)} leads outside the target` });
    }
  });
export type Manifest = z.infer<typeof manifestSchema>;

/** An empty manifest. */
export function emptyManifest(): Manifest {
  return { schema: 1, current: null, versions: {}, software: [] };
}

/** Reads the manifest of `target`; an absent one is empty, an unreadable one an error naming the file. */
export async function readManifest(target: string): Promise<Manifest> {
  const path = join(target, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyManifest();
    throw e;
  }
  const afresh = 'move it away to start afresh (reference-data files on disk that match the server checksums are kept, not downloaded again)';
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    // Cut short or hand-edited: name the file, not just a position in some JSON.
    throw new Error(`${path} is not a dq-refdata manifest (not JSON: ${(e as Error).message}); ${afresh}`, { cause: e });
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path} is not a dq-refdata manifest (${parsed.error.issues[0]?.message ?? 'invalid'}); ${afresh}`);
  return parsed.data;
}

/** Writes the manifest atomically: a crash leaves the old or the new one, never half of one. */
export async function writeManifest(target: string, manifest: Manifest): Promise<void> {
  const path = join(target, MANIFEST_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  await writingTo(path, async () => {
    try {
      const fh = await open(tmp, 'w');
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
