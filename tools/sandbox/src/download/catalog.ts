import { DATA_RELEASES, INT_REGIONS, PLATFORMLESS_ARTIFACTS, REFDATA_INSTALLERS, SOFTWARE_PLATFORMS } from '@dq/core/schemas';

/**
 * What the sandbox's download API offers (contract 2.6, 4.4, 4.5) and how a request path maps onto
 * it. Pure data and parsing: no bytes are produced here. The names the contract lists (platforms,
 * installers, releases, INT regions) are @dq/core's; which paths exist, and the 404s for the
 * rest, are decided here on their own, not by core's path checks, so a path the client gets
 * wrong is refused as the platform would.
 */

/** Software products with the version their `latest` packages carry in the file name. */
export const SOFTWARE_VERSIONS: Readonly<Record<string, string>> = {
  'software-bundle': '3.4.1',
  'license-service': '2.1.0',
  'bank-service': '1.8.2',
  uws: '5.0.3',
};
/** The reference-data installers under /download/v1/data/post/. */
export const INSTALLERS: readonly string[] = REFDATA_INSTALLERS;
export { INT_REGIONS };
const has = (list: readonly string[], value: string): boolean => list.includes(value);
/** Countries the sandbox holds reference data for (a subset of ISO 3166, as a real subscription). */
export const DATA_COUNTRIES: readonly string[] = ['AT', 'BE', 'CH', 'CZ', 'DE', 'DK', 'ES', 'FR', 'GB', 'IT', 'LU', 'NL', 'PL', 'SE', 'US'];
/** Post levels, the same three for every country, WORLD and the INT_* regions. */
export const POST_LEVELS: readonly string[] = ['001', '002', '003'];

/** A resolved download path: everything needed to produce and describe its bytes. */
export type CatalogEntry =
  | { kind: 'software'; product: string; platform: string | null; artifact: string; fileName: string }
  | { kind: 'data'; product: 'post' | 'autocompletion' | 'phone'; country: string; release: string; version: string; artifact: string }
  | { kind: 'installer'; artifact: string }
  | { kind: 'version' };

/** A parsed path: the entry, and whether the `.sha512` of it was asked for. */
export type Resolved = { entry: CatalogEntry; checksum: boolean } | { notFound: string };

/** Reference-data artifact names for one product and country; empty when the pair does not exist. */
export function dataArtifacts(product: string, country: string): string[] {
  const iso = DATA_COUNTRIES.includes(country);
  switch (product) {
    case 'post':
      return iso || country === 'WORLD' || has(INT_REGIONS, country) ? POST_LEVELS.map((level) => `${country}_${level}.zip`) : [];
    case 'autocompletion':
      return iso ? [`AC_${country}.zip`] : [];
    case 'phone':
      // The contract names no phone artifact; ours is PHONE_<country>.zip, per ISO country like post.
      return iso ? [`PHONE_${country}.zip`] : [];
    default:
      return [];
  }
}

/**
 * Maps a request path onto the catalog. `versions` are the reference-data versions on offer.
 * Unknown products, platforms, countries, releases, versions and artifacts give `notFound` with a
 * message naming the segment.
 */
export function resolvePath(pathname: string, versions: readonly string[]): Resolved {
  const prefix = '/download/v1/';
  if (!pathname.startsWith(prefix)) return { notFound: 'not a download path' };
  const segs = pathname.slice(prefix.length).split('/');
  if (segs.some((s) => s === '' || s === '.' || s === '..')) return { notFound: 'malformed path' };
  const last = segs[segs.length - 1] ?? '';
  const checksum = last.endsWith('.sha512');
  if (checksum) segs[segs.length - 1] = last.slice(0, -'.sha512'.length);
  const found =
    segs[0] === 'software'
      ? resolveSoftware(segs.slice(1))
      : segs[0] === 'data'
        ? resolveData(segs.slice(1), versions)
        : { notFound: `unknown download area "${segs[0]}"` };
  if ('notFound' in found) return found;
  if (checksum && found.kind === 'version') return { notFound: 'version.txt has no checksum file' };
  return { entry: found, checksum };
}

function resolveSoftware(segs: string[]): CatalogEntry | { notFound: string } {
  const [product, latest, ...rest] = segs;
  const version = product === undefined ? undefined : SOFTWARE_VERSIONS[product];
  if (product === undefined || version === undefined) return { notFound: `unknown software product "${product}"` };
  if (latest !== 'latest') return { notFound: 'software is delivered as "latest" only' };
  let platform: string | null = null;
  let artifact: string | undefined;
  if (rest.length === 1) {
    artifact = rest[0];
    if (!has(PLATFORMLESS_ARTIFACTS, artifact ?? '')) return { notFound: `artifact "${artifact}" needs a platform` };
  } else if (rest.length === 2) {
    [platform, artifact] = rest as [string, string];
    if (!has(SOFTWARE_PLATFORMS, platform)) return { notFound: `unknown platform "${platform}"` };
    if (product === 'uws' && platform !== 'linux') return { notFound: 'uws is available for linux only' };
  } else {
    return { notFound: 'unknown software path' };
  }
  const base = (artifact ?? '').replace(/\.zip$/, '');
  if (artifact !== `${product}.zip` && !has(PLATFORMLESS_ARTIFACTS, artifact ?? '')) {
    return { notFound: `unknown artifact "${artifact}" for ${product}` };
  }
  const fileName = platform === null ? `${base}-${version}.zip` : `${base}-${version}-${platform}.zip`;
  return { kind: 'software', product, platform, artifact: artifact ?? '', fileName };
}

function resolveData(segs: string[], versions: readonly string[]): CatalogEntry | { notFound: string } {
  if (segs.length === 2 && segs[0] === 'post') {
    if (segs[1] === 'version.txt') return { kind: 'version' };
    if (has(INSTALLERS, segs[1] ?? '')) return { kind: 'installer', artifact: segs[1] ?? '' };
    return { notFound: `unknown file "${segs[1]}"` };
  }
  if (segs.length !== 5) return { notFound: 'unknown data path' };
  const [product, country, release, version, artifact] = segs as [string, string, string, string, string];
  if (product !== 'post' && product !== 'autocompletion' && product !== 'phone') {
    return { notFound: `unknown data product "${product}"` };
  }
  const artifacts = dataArtifacts(product, country);
  if (artifacts.length === 0) return { notFound: `no ${product} data for country "${country}"` };
  if (!has(DATA_RELEASES, release)) return { notFound: `unknown release "${release}"` };
  if (!versions.includes(version)) return { notFound: `unknown version "${version}"` };
  if (!artifacts.includes(artifact)) return { notFound: `unknown artifact "${artifact}"` };
  return { kind: 'data', product, country, release, version, artifact };
}
