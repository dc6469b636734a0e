import { isCountryCode } from './countries.js';
import { shown, type Checked, type Violation } from './violations.js';

/** Software products (contract 2.6). */
export const SOFTWARE_PRODUCTS = ['software-bundle', 'license-service', 'bank-service', 'uws'] as const;
/** Software platforms (contract 2.6); `uws` exists only for linux. */
export const SOFTWARE_PLATFORMS = ['windows', 'linux', 'aix'] as const;
/** Software artifacts (contract 2.6). */
export const SOFTWARE_ARTIFACTS = [
  'software-bundle.zip',
  'user-manuals.zip',
  'release-notes.zip',
  'license-service.zip',
  'bank-service.zip',
  'uws.zip',
] as const;
/** Artifacts every product has, also reachable without a platform segment (contract 4.4). */
export const PLATFORMLESS_ARTIFACTS = ['user-manuals.zip', 'release-notes.zip'] as const;
/** Reference data products (contract 2.6). */
export const DATA_PRODUCTS = ['post', 'autocompletion', 'phone'] as const;
/** Reference data releases (contract 2.6). */
export const DATA_RELEASES = ['release-v1', 'release-v2', 'release-v3'] as const;
/** Regions of the international post service, usable as `<country>` for post (contract 2.6). */
export const INT_REGIONS = ['INT_AFRICA-MIDEAST', 'INT_ASIA', 'INT_EUROPE', 'INT_OCEANIA', 'INT_SOUTHAMERICA'] as const;
/** Reference data installers (contract 2.6), under /download/v1/data/post/. */
export const REFDATA_INSTALLERS = [
  'setupRefdata_aix_risc.sh',
  'setupRefdata_hp_itanium.sh',
  'setupRefdata_linux_x64.sh',
  'setupRefdata_linux_x86.sh',
  'setupRefdata_solaris_sparc.sh',
  'setupRefdata_solaris_x86.sh',
  'setupRefdata_windows_x64.exe',
  'setupRefdata_windows_x86.exe',
] as const;
/** Path of the reference-data version file (contract 4.5), relative to `{download_url}`. */
export const VERSION_FILE_PATH = '/download/v1/data/post/version.txt';
/** Suffix of a checksum artifact (contract 2.6). */
export const CHECKSUM_SUFFIX = '.sha512';

/** Path variables of a software download (contract 4.4); `platform` may be left out for manuals and release notes. */
export interface SoftwarePathParts {
  product: string;
  platform?: string | undefined;
  /** An artifact of 2.6, optionally with `.sha512` for its checksum. */
  artifact: string;
}
/** Path variables of a reference data download (contract 4.5). */
export interface DataPathParts {
  product: string;
  country: string;
  release: string;
  /** `yyyy-mm-01` */
  version: string;
  /** An artifact of 2.6, optionally with `.sha512` for its checksum. */
  artifact: string;
}

const has = (list: readonly string[], v: string): boolean => list.includes(v);
const bad = (fieldName: string, message: string): Violation => ({ fieldName, message });
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Checks software path variables (contract 2.6): products × platforms × artifacts, uws only on linux. */
export function validateSoftwarePath(parts: SoftwarePathParts): Violation[] {
  const out: Violation[] = [];
  const { product, platform } = parts;
  const artifact = parts.artifact.endsWith(CHECKSUM_SUFFIX) ? parts.artifact.slice(0, -CHECKSUM_SUFFIX.length) : parts.artifact;
  if (!has(SOFTWARE_PRODUCTS, product)) {
    out.push(bad('product', `must be one of ${SOFTWARE_PRODUCTS.join(', ')}; got ${shown(product)}`));
  }
  if (platform === undefined || platform === '') {
    if (!has(PLATFORMLESS_ARTIFACTS, artifact)) {
      out.push(bad('platform', `is required for ${shown(artifact)}; one of ${SOFTWARE_PLATFORMS.join(', ')}`));
    }
  } else if (!has(SOFTWARE_PLATFORMS, platform)) {
    out.push(bad('platform', `must be one of ${SOFTWARE_PLATFORMS.join(', ')}; got ${shown(platform)}`));
  } else if (product === 'uws' && platform !== 'linux') {
    out.push(bad('platform', `uws is only available for linux, not ${shown(platform)}`));
  }
  if (!has(SOFTWARE_ARTIFACTS, artifact)) {
    out.push(bad('artifact', `must be one of ${SOFTWARE_ARTIFACTS.join(', ')}; got ${shown(artifact)}`));
  } else if (has(SOFTWARE_PRODUCTS, product) && !has(PLATFORMLESS_ARTIFACTS, artifact) && artifact !== `${product}.zip`) {
    out.push(bad('artifact', `${product} offers ${product}.zip, user-manuals.zip or release-notes.zip; got ${shown(artifact)}`));
  }
  return out;
}

/** Checks reference data path variables (contract 2.6): country, release, version and artifact name. */
export function validateDataPath(parts: DataPathParts): Violation[] {
  const out: Violation[] = [];
  const { product, country, release, version } = parts;
  const artifact = parts.artifact.endsWith(CHECKSUM_SUFFIX) ? parts.artifact.slice(0, -CHECKSUM_SUFFIX.length) : parts.artifact;
  if (!has(DATA_PRODUCTS, product)) {
    out.push(bad('product', `must be one of ${DATA_PRODUCTS.join(', ')}; got ${shown(product)}`));
  }
  const postOnly = country === 'WORLD' || has(INT_REGIONS, country);
  if (postOnly && product !== 'post') {
    out.push(bad('country', `${country} exists only for post data, not ${shown(product)}`));
  } else if (!postOnly && !isCountryCode(country)) {
    out.push(
      bad(
        'country',
        `must be an upper-case ISO 3166-1 alpha-2 code, WORLD or one of ${INT_REGIONS.join(', ')} (the last two for post only); got ${shown(country)}`,
      ),
    );
  }
  if (!has(DATA_RELEASES, release)) {
    out.push(bad('release', `must be one of ${DATA_RELEASES.join(', ')}; got ${shown(release)}`));
  }
  if (!/^\d{4}-(0[1-9]|1[0-2])-01$/.test(version)) {
    out.push(bad('version', `must be the first day of a month, yyyy-mm-01; got ${shown(version)}`));
  }
  if (product === 'post' && !(artifact.startsWith(`${country}_`) && /^_\d{3}\.zip$/.test(artifact.slice(country.length)))) {
    out.push(bad('artifact', `post data is <country>_<three-digit level>.zip, e.g. ${country}_001.zip; got ${shown(artifact)}`));
  } else if (product === 'autocompletion' && artifact !== `AC_${country}.zip`) {
    out.push(bad('artifact', `autocompletion data is AC_${country}.zip; got ${shown(artifact)}`));
  } else if (product === 'phone' && (!SAFE_NAME.test(artifact) || artifact.includes('..'))) {
    out.push(bad('artifact', `must be a plain file name (letters, digits, . _ -); got ${shown(artifact)}`));
  }
  return out;
}

/** The URL path of a software download, or the violations that refuse it. */
export function softwarePath(parts: SoftwarePathParts): Checked<string> {
  const violations = validateSoftwarePath(parts);
  if (violations.length > 0) return { ok: false, violations };
  const platform = parts.platform ? `/${parts.platform}` : '';
  return { ok: true, value: `/download/v1/software/${parts.product}/latest${platform}/${parts.artifact}` };
}

/** The URL path of a reference data download, or the violations that refuse it. */
export function dataPath(parts: DataPathParts): Checked<string> {
  const violations = validateDataPath(parts);
  if (violations.length > 0) return { ok: false, violations };
  const { product, country, release, version, artifact } = parts;
  return { ok: true, value: `/download/v1/data/${product}/${country}/${release}/${version}/${artifact}` };
}

/** The URL path of an installer (contract 4.5), or the violation that refuses it. */
export function installerPath(installer: string): Checked<string> {
  return has(REFDATA_INSTALLERS, installer)
    ? { ok: true, value: `/download/v1/data/post/${installer}` }
    : { ok: false, violations: [bad('installer', `must be one of ${REFDATA_INSTALLERS.join(', ')}; got ${shown(installer)}`)] };
}

/** What a download URL path addresses. */
export type DownloadTarget =
  | ({ kind: 'software'; checksum: boolean } & SoftwarePathParts)
  | ({ kind: 'data'; checksum: boolean } & DataPathParts)
  | { kind: 'version-file' }
  | { kind: 'installer'; installer: string };

/** Parses and checks a download URL path (with or without a query string). */
export function parseDownloadPath(pathname: string): Checked<DownloadTarget> {
  const path = pathname.split('?')[0] ?? '';
  if (path === VERSION_FILE_PATH) return { ok: true, value: { kind: 'version-file' } };
  const seg = path.split('/').slice(1);
  const [d, v1, area, ...rest] = seg;
  if (d !== 'download' || v1 !== 'v1' || (area !== 'software' && area !== 'data')) {
    return { ok: false, violations: [bad('path', 'must start with /download/v1/software/ or /download/v1/data/')] };
  }
  if (area === 'software') {
    const [product = '', latest, ...tail] = rest;
    if (latest !== 'latest' || tail.length < 1 || tail.length > 2) {
      return { ok: false, violations: [bad('path', 'software paths are /download/v1/software/<product>/latest/[<platform>/]<artifact>')] };
    }
    const parts = tail.length === 2 ? { product, platform: tail[0], artifact: tail[1] ?? '' } : { product, artifact: tail[0] ?? '' };
    const violations = validateSoftwarePath(parts);
    return violations.length > 0
      ? { ok: false, violations }
      : { ok: true, value: { kind: 'software', checksum: parts.artifact.endsWith(CHECKSUM_SUFFIX), ...parts } };
  }
  if (rest.length === 2 && rest[0] === 'post')
    return installerPath(rest[1] ?? '').ok
      ? { ok: true, value: { kind: 'installer', installer: rest[1] ?? '' } }
      : { ok: false, violations: [bad('installer', `must be version.txt or one of ${REFDATA_INSTALLERS.join(', ')}`)] };
  const [product, country, release, version, artifact] = rest;
  if (rest.length !== 5 || !product || !country || !release || !version || !artifact) {
    return { ok: false, violations: [bad('path', 'data paths are /download/v1/data/<product>/<country>/<release>/<version>/<artifact>')] };
  }
  const parts = { product, country, release, version, artifact };
  const violations = validateDataPath(parts);
  return violations.length > 0 ? { ok: false, violations } : { ok: true, value: { kind: 'data', checksum: artifact.endsWith(CHECKSUM_SUFFIX), ...parts } };
}

/** Checks a download URL path; an empty list means it names a valid artifact (contract 2.6). */
export function validateDownloadPath(pathname: string): Violation[] {
  const parsed = parseDownloadPath(pathname);
  return parsed.ok ? [] : parsed.violations;
}
