/**
 * Deterministic bytes for the small download artifacts: real zip archives (fflate) whose content
 * depends only on the seed and the catalog entry, so every sandbox started with one seed serves
 * byte-identical files and identical `.sha512` digests.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { zipSync } from 'fflate';
import type { CatalogEntry } from './catalog.js';

/** A small seeded PRNG (sfc32); enough for generated names, not for anything secret. */
export function seededRandom(seed: number, key: string): () => number {
  const h = createHash('sha256').update(`${seed}:${key}`).digest();
  let a = h.readUInt32LE(0),
    b = h.readUInt32LE(4),
    c = h.readUInt32LE(8),
    d = h.readUInt32LE(12);
  return () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (a + b + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

/** `length` incompressible bytes from an AES-CTR key stream keyed by seed and `key`. */
export function noiseBytes(seed: number, key: string, length: number): Buffer {
  return keyStream(seed, key).update(Buffer.alloc(length));
}

/** A cipher whose successive `update(zeros)` calls yield a deterministic key stream. */
export function keyStream(seed: number, key: string) {
  const h = createHash('sha256').update(`noise:${seed}:${key}`).digest();
  return createCipheriv('aes-128-ctr', h.subarray(0, 16), h.subarray(16, 32));
}

const SYLLABLES = ['berg', 'dorf', 'feld', 'hausen', 'heim', 'ingen', 'bach', 'au', 'stein', 'burg', 'wald', 'hof', 'see', 'rode', 'tal', 'brück'];
const PREFIXES = ['Alt', 'Neu', 'Ober', 'Unter', 'Groß', 'Klein', 'Bad ', 'Sankt ', 'Hohen', 'Nieder'];
const STREET_KINDS = ['straße', 'weg', 'gasse', 'allee', 'ring', 'platz', 'damm'];

function name(rnd: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const stem = pick(SYLLABLES);
  return (pick(PREFIXES) + stem).replace(/^(.)/, (m) => m.toUpperCase());
}

/** Line counts per artifact: level 001 is the biggest file, like a real main address data set. */
function lineCount(artifact: string): number {
  if (/_001\.zip$/.test(artifact)) return 3000;
  if (/_002\.zip$/.test(artifact)) return 1500;
  return 800;
}

// DOS time stamps in zips are local time: a Date built from local components keeps bytes TZ-independent.
function stamp(version: string): Date {
  const [y, m] = version.split('-').map(Number) as [number, number];
  return new Date(y, m - 1, 1, 3, 0, 0);
}

function dataZip(seed: number, e: Extract<CatalogEntry, { kind: 'data' }>): Uint8Array {
  const key = `${e.product}/${e.country}/${e.release}/${e.version}/${e.artifact}`;
  const rnd = seededRandom(seed, key);
  const dir = e.artifact.replace(/\.zip$/, '');
  const rows: string[] = [];
  const n = lineCount(e.artifact);
  for (let i = 0; i < n; i++) {
    const postal = String(10000 + Math.floor(rnd() * 89999));
    const from = 1 + 2 * Math.floor(rnd() * 40);
    const step = rnd() < 0.5 ? 'even' : 'odd';
    const town = name(rnd);
    const street = name(rnd) + STREET_KINDS[Math.floor(rnd() * STREET_KINDS.length)];
    rows.push(`${postal};${town};${street};${from};${from + 2 * Math.floor(rnd() * 60)};${step}`);
  }
  const mtime = stamp(e.version);
  const header = e.product === 'phone' ? 'prefix;area;type;min;max;step\n' : 'postalCode;locality;street;from;to;step\n';
  return zipSync({
    [`${dir}/data.csv`]: [Buffer.from(header + rows.join('\n') + '\n'), { level: 6, mtime }],
    [`${dir}/VERSION`]: [Buffer.from(`${e.product} ${e.country} ${e.release} ${e.version}\n`), { level: 0, mtime }],
  });
}

function softwareZip(seed: number, e: Extract<CatalogEntry, { kind: 'software' }>): Uint8Array {
  const mtime = new Date(2026, 0, 1, 3, 0, 0);
  const base = e.fileName.replace(/\.zip$/, '');
  return zipSync({
    [`${base}/README.txt`]: [Buffer.from(`${e.product} ${e.fileName}\nplatform: ${e.platform ?? 'any'}\n`), { level: 6, mtime }],
    [`${base}/payload.bin`]: [noiseBytes(seed, `software/${e.fileName}`, 48 * 1024), { level: 0, mtime }],
  });
}

function installer(seed: number, artifact: string, version: string): Buffer {
  if (artifact.endsWith('.exe')) {
    return Buffer.concat([Buffer.from('MZ'), noiseBytes(seed, `installer/${artifact}`, 32 * 1024)]);
  }
  return Buffer.from(
    [
      '#!/bin/sh',
      `# ${artifact}: installs reference data of version ${version} (sandbox installer)`,
      'set -eu',
      'target="${1:?usage: $0 <refdata dir>}"',
      'for z in "$target"/*.zip; do unzip -o -q "$z" -d "$target/installed"; done',
      '',
    ].join('\n'),
  );
}

/** The bytes of one catalog entry (never the large artifact: see large-artifact.ts). */
export function entryBytes(seed: number, entry: CatalogEntry, currentVersion: string): Buffer {
  switch (entry.kind) {
    case 'data':
      return Buffer.from(dataZip(seed, entry));
    case 'software':
      return Buffer.from(softwareZip(seed, entry));
    case 'installer':
      return installer(seed, entry.artifact, currentVersion);
    case 'version':
      return Buffer.from(`${currentVersion}\n`);
  }
}
