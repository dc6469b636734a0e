/**
 * The sync configuration: from a JSON file (`--config`) or flags, checked in full — including the
 * platform's download path rules — before any request is made.
 */
import { readFile } from 'node:fs/promises';
import { DATA_PRODUCTS, DATA_RELEASES, validateDataPath, validateSoftwarePath } from '@dq/core/schemas';
import type { Violation } from '@dq/core';
import { z } from 'zod';
import { UsageError } from './errors.js';

const PLATFORM_INSTALLER: Readonly<Record<string, string>> = {
  aix_risc: 'setupRefdata_aix_risc.sh',
  hp_itanium: 'setupRefdata_hp_itanium.sh',
  linux_x64: 'setupRefdata_linux_x64.sh',
  linux_x86: 'setupRefdata_linux_x86.sh',
  solaris_sparc: 'setupRefdata_solaris_sparc.sh',
  solaris_x86: 'setupRefdata_solaris_x86.sh',
  windows_x64: 'setupRefdata_windows_x64.exe',
  windows_x86: 'setupRefdata_windows_x86.exe',
};

/** One software package to keep: product, platform (absent for manuals/release notes) and artifact. */
export interface SoftwareSpec {
  product: string;
  platform?: string;
  artifact: string;
}

/** A complete, checked sync configuration. */
export interface SyncConfig {
  /** `{download_url}`, e.g. `http://127.0.0.1:8080`. */
  downloadUrl: string;
  apiKey: string;
  /** Directory holding `<version>/`, `manifest.json` and `current`. */
  target: string;
  products: Array<(typeof DATA_PRODUCTS)[number]>;
  countries: string[];
  release: (typeof DATA_RELEASES)[number];
  /** Installer platform, e.g. `linux_x64` (its installer is fetched on every sync). */
  platform: string;
  /** Post levels, three digits each (default `001`). */
  levels: string[];
  software: SoftwareSpec[];
  /** Complete versions to keep, the current one included (default 2, minimum 1). */
  keep: number;
  /** Seconds to wait for another sync's lock before giving up (default 0: exit at once). */
  lockWaitSeconds: number;
  /** Per-attempt timeout of the download client, ms. */
  timeoutMs: number;
}

const list = z.union([
  z.string().transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  ),
  z.array(z.string()),
]);

/**
 * A number as JSON writes it or a flag spells it (`2`, `"2"`, `"0.5"`). Never a boolean, null, a
 * list or hex, which a bare coercion takes as a number: `"keep": true` would be 1 and remove every
 * other version.
 */
function numeric(example: string) {
  const problem = `must be a number such as ${example}`;
  return z.union(
    [
      z.number(),
      z
        .string()
        .trim()
        .regex(/^\d+(\.\d+)?$/, problem)
        .transform(Number),
    ],
    { error: problem },
  );
}

/**
 * Refuses a path that starts with `~`: only a shell expands it, and a config file, a scheduler's
 * task or a systemd unit pass it as it is, which would make a folder named `~` under the working
 * folder (where a reader of the data does not look, and which `rm -rf ~` would mistake for the home
 * folder).
 */
export function refuseUnexpandedHome(setting: string, path: string): void {
  if (!path.startsWith('~')) return;
  throw new UsageError(
    `${setting} ${path}: the "~" was not expanded (no shell read it, so it would name a folder "~" under the working folder): give the full path, such as /home/<user>/… or $HOME/… in a shell`,
  );
}

/** The config file's shape; flags use the same names in kebab-case. */
export const syncConfigSchema = z.strictObject({
  downloadUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://download.example.com' }),
  apiKey: z.string().min(1),
  target: z.string().min(1),
  products: list.pipe(z.array(z.enum(DATA_PRODUCTS)).min(1)),
  countries: list.pipe(z.array(z.string().min(1)).min(1)),
  release: z.enum(DATA_RELEASES),
  platform: z.enum(Object.keys(PLATFORM_INSTALLER) as [string, ...string[]]),
  levels: list.pipe(z.array(z.string().regex(/^\d{3}$/, 'must be three digits, e.g. 001'))).default(['001']),
  software: list.default([]),
  keep: numeric('2').pipe(z.number().int().min(1)).default(2),
  lockWait: numeric('60').pipe(z.number().min(0)).default(0),
  timeoutMs: numeric('30000').pipe(z.number().int().positive()).default(30_000),
});

/** The installer file name of a platform. */
export function installerFor(platform: string): string {
  const name = PLATFORM_INSTALLER[platform];
  if (name === undefined) throw new UsageError(`unknown platform "${platform}"`);
  return name;
}

/** `software-bundle:linux`, `uws:linux`, `bank-service:release-notes.zip`, `license-service:aix:user-manuals.zip`. */
function parseSoftware(spec: string): { value: SoftwareSpec; violations: Violation[] } {
  const parts = spec.split(':');
  const product = parts[0] ?? '';
  let platform: string | undefined;
  let artifact = `${product}.zip`;
  if (parts.length === 2) {
    if ((parts[1] ?? '').endsWith('.zip')) artifact = parts[1] ?? '';
    else platform = parts[1];
  } else if (parts.length === 3) {
    platform = parts[1];
    artifact = parts[2] ?? '';
  }
  const value: SoftwareSpec = platform === undefined ? { product, artifact } : { product, platform, artifact };
  const violations =
    parts.length < 2 || parts.length > 3
      ? [{ fieldName: 'software', message: `"${spec}" must be <product>:<platform>[:<artifact>] or <product>:<artifact>` }]
      : validateSoftwarePath(value).map((v) => ({ fieldName: `software.${v.fieldName}`, message: `${v.message} (in "${spec}")` }));
  return { value, violations };
}

/** Checks raw settings (file content merged with flags, flags winning); throws {@link UsageError} naming every bad field. */
export function resolveSyncConfig(raw: Record<string, unknown>): SyncConfig {
  const parsed = syncConfigSchema.safeParse(raw);
  if (!parsed.success) {
    // A setting not given at all is named as missing, not with the schema's "Invalid input".
    const flag = (name: string) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const fields = parsed.error.issues.map((i) => {
      const [name, ...deeper] = i.path.map(String);
      if (name === 'apiKey' && raw[name] === undefined) return 'the API key is missing: set DQ_API_KEY (or give --api-key)';
      if (name !== undefined && deeper.length === 0 && raw[name] === undefined)
        return `${name}: required (give "${name}" in the config file, or ${flag(name)})`;
      return `${i.path.join('.') || '(config)'}: ${i.message}`;
    });
    throw new UsageError(`invalid sync configuration: ${fields.join('; ')}`);
  }
  const c = parsed.data;
  refuseUnexpandedHome('--target (or "target" in the config file)', c.target);
  // A package named twice (`uws:linux,uws:linux`) is one package: it is fetched once.
  const software = [...new Set(c.software)].map(parseSoftware);
  // A country the contract knows for no product (a typo such as "de") is an error, not "not offered":
  // post takes every country, WORLD and the INT_ regions, so its rules decide.
  const countryViolations = c.countries.flatMap((country) =>
    validateDataPath({ product: 'post', country, release: c.release, version: '2000-01-01', artifact: `${country}_001.zip` })
      .filter((v) => v.fieldName === 'country')
      .map((v) => ({ fieldName: 'countries', message: `"${country}" ${v.message}` })),
  );
  const violations = [...countryViolations, ...software.flatMap((s) => s.violations)];
  if (violations.length > 0) {
    throw new UsageError(`refused before any request: ${violations.map((v) => `${v.fieldName}: ${v.message}`).join('; ')}`);
  }
  return {
    downloadUrl: c.downloadUrl,
    apiKey: c.apiKey,
    target: c.target,
    products: [...new Set(c.products)],
    countries: [...new Set(c.countries)],
    release: c.release,
    platform: c.platform,
    levels: [...new Set(c.levels)],
    software: software.map((s) => s.value),
    keep: c.keep,
    lockWaitSeconds: c.lockWait,
    timeoutMs: c.timeoutMs,
  };
}

/** Reads a JSON config file; a missing or malformed file is a {@link UsageError}. */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new UsageError(`cannot read config file ${path}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`);
  }
  try {
    // A byte order mark, as Windows editors write at the start of UTF-8, is no part of the JSON.
    const value: unknown = JSON.parse(text.replace(/^\uFEFF/, ''));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch (cause) {
    throw new UsageError(`config file ${path} is not a JSON object: ${(cause as Error).message}`);
  }
}
