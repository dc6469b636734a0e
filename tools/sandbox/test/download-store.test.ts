import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { afterAll, describe, expect, it } from 'vitest';
import { createDownloadStore, type DownloadFile, type DownloadStore } from '../src/download/index.js';

const work = mkdtempSync(join(tmpdir(), 'dq-download-store-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function bytesOf(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts);
}

function file(store: DownloadStore, path: string): DownloadFile {
  const f = store.lookup(path);
  if ('notFound' in f) throw new Error(`expected ${path} to exist: ${f.message}`);
  return f;
}

const whole = (f: DownloadFile) => bytesOf(f.read(0, f.size - 1));
const DE1 = '/download/v1/data/post/DE/release-v3/2026-11-01/DE_001.zip';

describe('download store', () => {
  const store = createDownloadStore({ seed: 7 });

  it('serves post data as a real zip archive whose .sha512 matches in sha512sum format', async () => {
    const zip = file(store, DE1);
    const bytes = await whole(zip);
    expect(bytes.length).toBe(zip.size);
    expect(zip.auth).toBe(true);
    expect(zip.contentType).toBe('application/zip');
    const entries = unzipSync(bytes);
    const csv = Buffer.from(entries['DE_001/data.csv'] ?? []).toString();
    expect(csv.split('\n').length).toBeGreaterThan(1000);

    const sum = file(store, `${DE1}.sha512`);
    expect(sum.auth).toBe(false);
    const line = (await whole(sum)).toString();
    expect(line.length).toBe(sum.size);
    expect(line).toBe(`${createHash('sha512').update(bytes).digest('hex')}  DE_001.zip\n`);

    // The real tool accepts the file: the format is exactly sha512sum's.
    writeFileSync(join(work, 'DE_001.zip'), bytes);
    writeFileSync(join(work, 'DE_001.zip.sha512'), line);
    expect(execFileSync('sha512sum', ['-c', 'DE_001.zip.sha512'], { cwd: work }).toString()).toContain('DE_001.zip: OK');
  });

  it('produces byte-identical files for one seed and different files for another', async () => {
    const again = await whole(file(createDownloadStore({ seed: 7 }), DE1));
    const other = await whole(file(createDownloadStore({ seed: 8 }), DE1));
    const first = await whole(file(store, DE1));
    expect(again.equals(first)).toBe(true);
    expect(other.equals(first)).toBe(false);
  });

  it('serves any byte range of a file', async () => {
    const zip = file(store, '/download/v1/data/autocompletion/AT/release-v2/2026-10-01/AC_AT.zip');
    const all = await whole(zip);
    expect((await bytesOf(zip.read(100, 4099))).equals(all.subarray(100, 4100))).toBe(true);
    expect((await bytesOf(zip.read(zip.size - 1, zip.size - 1))).equals(all.subarray(-1))).toBe(true);
  });

  it('announces the current version in version.txt and offers it and the two months before', async () => {
    const custom = createDownloadStore({ currentVersion: '2027-01-01' });
    const text = (await whole(file(custom, '/download/v1/data/post/version.txt'))).toString();
    expect(text.split('\n')[0]).toBe('2027-01-01');
    for (const v of ['2027-01-01', '2026-12-01', '2026-11-01']) {
      expect('notFound' in custom.lookup(`/download/v1/data/post/AT/release-v1/${v}/AT_002.zip`)).toBe(false);
    }
    expect(custom.lookup('/download/v1/data/post/AT/release-v1/2026-10-01/AT_002.zip')).toMatchObject({ notFound: true });
  });

  it('serves the eight installers, phone data, WORLD and the INT regions', async () => {
    for (const name of [
      'setupRefdata_aix_risc.sh',
      'setupRefdata_hp_itanium.sh',
      'setupRefdata_linux_x64.sh',
      'setupRefdata_linux_x86.sh',
      'setupRefdata_solaris_sparc.sh',
      'setupRefdata_solaris_x86.sh',
      'setupRefdata_windows_x64.exe',
      'setupRefdata_windows_x86.exe',
    ]) {
      expect(file(store, `/download/v1/data/post/${name}`).size).toBeGreaterThan(50);
    }
    expect((await whole(file(store, '/download/v1/data/post/setupRefdata_linux_x64.sh'))).toString()).toMatch(/^#!\/bin\/sh/);
    file(store, '/download/v1/data/phone/DE/release-v3/2026-11-01/PHONE_DE.zip');
    file(store, '/download/v1/data/post/WORLD/release-v3/2026-11-01/WORLD_001.zip');
    file(store, '/download/v1/data/post/INT_EUROPE/release-v3/2026-11-01/INT_EUROPE_001.zip');
  });

  it('answers 404 material for unknown products, countries, releases, versions, levels and platforms', () => {
    const missing = [
      '/download/v1/data/gas/DE/release-v3/2026-11-01/DE_001.zip',
      '/download/v1/data/post/XX/release-v3/2026-11-01/XX_001.zip',
      '/download/v1/data/post/DE/release-v4/2026-11-01/DE_001.zip',
      '/download/v1/data/post/DE/release-v3/2026-11-02/DE_001.zip',
      '/download/v1/data/post/DE/release-v3/2025-01-01/DE_001.zip',
      '/download/v1/data/post/DE/release-v3/2026-11-01/DE_004.zip',
      '/download/v1/data/post/DE/release-v3/2026-11-01/AT_001.zip',
      '/download/v1/data/autocompletion/INT_ASIA/release-v3/2026-11-01/AC_INT_ASIA.zip',
      '/download/v1/data/post/version.txt.sha512',
      '/download/v1/data/phone/WORLD/release-v3/2026-11-01/PHONE_WORLD.zip',
      '/download/v1/data/post/setup.sh',
      '/download/v1/software/office/latest/linux/office.zip',
      '/download/v1/software/uws/latest/windows/uws.zip',
      '/download/v1/software/software-bundle/latest/beos/software-bundle.zip',
      '/download/v1/software/software-bundle/latest/software-bundle.zip',
      '/download/v1/software/software-bundle/latest/linux/uws.zip',
      '/download/v1/software/software-bundle/3.4.1/linux/software-bundle.zip',
      '/download/v1/software/../data/post/version.txt',
      '/download/v2/data/post/version.txt',
    ];
    for (const p of missing) {
      const r = store.lookup(p);
      expect(r, p).toMatchObject({ notFound: true });
      if ('notFound' in r) expect(r.message.length).toBeGreaterThan(5);
    }
  });

  it('names software packages with their version in Content-Disposition, uws only on linux', async () => {
    const bundle = file(store, '/download/v1/software/software-bundle/latest/linux/software-bundle.zip');
    expect(bundle.contentDisposition).toBe('attachment; filename="software-bundle-3.4.1-linux.zip"');
    expect(Object.keys(unzipSync(await whole(bundle)))).toContain('software-bundle-3.4.1-linux/README.txt');
    expect(file(store, '/download/v1/software/uws/latest/linux/uws.zip').contentDisposition).toContain('uws-5.0.3-linux.zip');
    expect(file(store, '/download/v1/software/bank-service/latest/release-notes.zip').contentDisposition).toContain('release-notes-1.8.2.zip');
    file(store, '/download/v1/software/license-service/latest/aix/user-manuals.zip');
    file(store, '/download/v1/software/bank-service/latest/aix/bank-service.zip.sha512');
  });

  it('serves a configured hostile Content-Disposition as it is', () => {
    const hostile = createDownloadStore({ contentDispositionOverride: 'attachment; filename="../../etc/x"' });
    expect(file(hostile, '/download/v1/software/software-bundle/latest/windows/software-bundle.zip').contentDisposition).toBe(
      'attachment; filename="../../etc/x"',
    );
  });

  it('serves corrupted bytes of the same size that do not match the .sha512', async () => {
    const good = createDownloadStore({ seed: 3 });
    const bad = createDownloadStore({ seed: 3, corrupt: ['AT_001.zip'] });
    const path = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
    const [g, b] = [await whole(file(good, path)), await whole(file(bad, path))];
    expect(b.length).toBe(g.length);
    expect(b.equals(g)).toBe(false);
    const sum = (await whole(file(bad, `${path}.sha512`))).toString().slice(0, 128);
    expect(sum).toBe(createHash('sha512').update(g).digest('hex'));
    // other artifacts stay intact
    const other = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_002.zip';
    expect((await whole(file(bad, other))).equals(await whole(file(good, other)))).toBe(true);
  });

  it('rejects invalid options naming the option', () => {
    expect(() => createDownloadStore({ currentVersion: '2026-11-15' })).toThrow(/currentVersion/);
    expect(() => createDownloadStore({ largeArtifactMiB: -1 })).toThrow(/largeArtifactMiB/);
    expect(() => createDownloadStore({ colour: 'red' })).toThrow(TypeError);
  });
});

describe('large artifact', () => {
  it('is a real zip streamed from a cache file, with a size known before generation and a matching digest', async () => {
    const cacheDir = join(work, 'cache');
    const opts = { seed: 5, largeArtifact: 'AT_001.zip', largeArtifactMiB: 3, cacheDir };
    const store = createDownloadStore(opts);
    const path = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
    const zip = file(store, path);
    expect(zip.size).toBeGreaterThan(3 * 1024 * 1024);
    const bytes = await whole(zip);
    expect(bytes.length).toBe(zip.size);
    const sum = (await whole(file(store, `${path}.sha512`))).toString();
    expect(sum).toBe(`${createHash('sha512').update(bytes).digest('hex')}  AT_001.zip\n`);
    writeFileSync(join(work, 'AT_001.zip'), bytes);
    expect(execFileSync('unzip', ['-t', join(work, 'AT_001.zip')]).toString()).toContain('No errors detected');
    // A second store (another sandbox) reuses the cache and serves the same bytes; ranges work.
    const again = file(createDownloadStore(opts), path);
    expect((await bytesOf(again.read(1_000_000, 1_999_999))).equals(bytes.subarray(1_000_000, 2_000_000))).toBe(true);
  });

  it('can be corrupted like a small artifact', async () => {
    const store = createDownloadStore({ seed: 5, largeArtifact: 'AT_001.zip', largeArtifactMiB: 3, cacheDir: join(work, 'cache'), corrupt: ['AT_001.zip'] });
    const path = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
    const bytes = await whole(file(store, path));
    const sum = (await whole(file(store, `${path}.sha512`))).toString().slice(0, 128);
    expect(createHash('sha512').update(bytes).digest('hex')).not.toBe(sum);
  });
});
