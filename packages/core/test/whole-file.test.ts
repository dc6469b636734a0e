import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { chmod, lstat, mkdir, readFile, readdir, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { checkWholeFileTarget, WholeFileError, writeWholeFile } from '@dq/core/files';
import { writeReport } from '@dq/core/report';
import type { ReportPage } from '@dq/core/report';
import { openStore } from '@dq/core/store';
import { useTempDir } from '@dq/test-support/use';

const dir = useTempDir('dq-whole-file-');

const PAGE: ReportPage = { tool: 'dq-csv validate', subject: 'in.csv', generatedAt: '2026-12-06T00:00:00Z', summary: { rows: 1 }, details: {} };

/** The names in `folder` other than `keep`: a temporary file left behind shows here. */
async function others(folder: string, keep: readonly string[]): Promise<string[]> {
  return (await readdir(folder)).filter((name) => !keep.includes(name));
}

describe('writing a whole file (reports, review files)', () => {
  it(
    'writes into a pipe (and so a device such as /dev/null) in place: the pipe is still a pipe, and its reader gets the page',
    { timeout: 10_000 },
    async () => {
      const folder = join(dir, 'pipe');
      await mkdir(folder);
      const fifo = join(folder, 'report.html');
      execFileSync('mkfifo', [fifo]);
      const read = text(createReadStream(fifo));
      await writeReport(fifo, PAGE);
      expect(await read).toContain('<html');
      expect((await lstat(fifo)).isFIFO()).toBe(true);
      expect(await others(folder, ['report.html'])).toEqual([]);
    },
  );

  it.runIf(process.getuid?.() === 0)('as root, a report to a character device leaves the device in place (not a file renamed over it)', async () => {
    const folder = join(dir, 'dev');
    await mkdir(folder);
    const nullDevice = join(folder, 'null');
    execFileSync('mknod', [nullDevice, 'c', '1', '3']);
    await writeReport(nullDevice, PAGE);
    expect((await lstat(nullDevice)).isCharacterDevice()).toBe(true);
    expect(await others(folder, ['null'])).toEqual([]);
  });

  it('writes through a symlink: the link stays, the file it leads to gets the page and keeps its permissions', async () => {
    const real = join(dir, 'real');
    const links = join(dir, 'links');
    await mkdir(real);
    await mkdir(links);
    await writeFile(join(real, 'report.html'), 'old');
    await chmod(join(real, 'report.html'), 0o640);
    await symlink(join(real, 'report.html'), join(links, 'report.html'));
    await writeReport(join(links, 'report.html'), PAGE);
    expect((await lstat(join(links, 'report.html'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(links, 'report.html'))).toBe(join(real, 'report.html'));
    expect(await readFile(join(real, 'report.html'), 'utf8')).toContain('<html');
    expect((await stat(join(real, 'report.html'))).mode & 0o777).toBe(0o640);
    expect(await others(real, ['report.html'])).toEqual([]);
  });

  it("refuses a result store's database file and its lock file (any folder), before and when writing, and leaves them as they were", async () => {
    const storeDir = join(dir, 'some-store');
    const store = await openStore(storeDir);
    await store!.set('k', { source: 'api', result: { resultClass: 'A' }, requestId: 'r-1', checkedAt: '2026-12-06T00:00:00Z' } as never);
    await store!.close();
    for (const file of ['results.mdb', 'results.mdb-lock']) {
      const path = join(storeDir, file);
      const before = await readFile(path);
      await expect(checkWholeFileTarget(path)).rejects.toThrow(WholeFileError);
      const refused = await writeReport(path, PAGE).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(WholeFileError);
      expect((refused as WholeFileError).code).toBe('path-conflict');
      expect((refused as Error).message).toContain("a result store's database");
      expect((await readFile(path)).equals(before)).toBe(true);
    }
    expect((await readdir(storeDir)).sort()).toEqual(['results.mdb', 'results.mdb-lock']);
    const reopened = await openStore(storeDir);
    expect((await reopened!.get('k'))?.requestId).toBe('r-1');
    await reopened!.close();
  });

  it('refuses a folder, and names a missing folder, with what to do', async () => {
    await expect(writeWholeFile(dir, async () => undefined)).rejects.toThrow(/is a folder: name a file in it/);
    await expect(checkWholeFileTarget(join(dir, 'missing', 'report.html'))).rejects.toThrow(/ENOENT\): its folder does not exist/);
  });
});
