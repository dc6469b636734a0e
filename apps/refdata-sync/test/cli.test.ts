import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_BIN, DEFAULT_API_KEY, downloadRequests, freshTarget, runCli, sandboxWith, removeTargets, syncFlags } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const flags = (target: string) => [
  '--download-url',
  sandbox.url,
  '--target',
  target,
  '--products',
  'post,autocompletion',
  '--countries',
  'DE,AT',
  '--release',
  'release-v3',
  '--platform',
  'linux_x64',
];

describe('dq-refdata command line', () => {
  it('--help states the default of every optional flag', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    for (const flag of ['--levels 001', '--software none', '--keep 2', '--lock-wait 0', '--timeout-ms 30000', '--max-age 1d'])
      expect(run.stdout).toContain(flag);
  });

  it('syncs with flags, prints one JSON summary line and exits 0; the API key appears nowhere', async () => {
    const target = freshTarget();
    const r = await runCli(['sync', ...flags(target), '--keep', '1'], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0] ?? '{}');
    expect(summary).toMatchObject({ command: 'sync', status: 'updated', version: '2026-11-01' });
    expect(summary.downloaded).toHaveLength(4);
    expect(r.stdout + r.stderr).not.toContain(DEFAULT_API_KEY);

    const again = await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'up-to-date', downloaded: [] });

    const status = await runCli(['status', '--target', target]);
    expect(JSON.parse(status.stdout)).toMatchObject({
      command: 'status',
      current: '2026-11-01',
      versions: [{ version: '2026-11-01', complete: true, files: 4 }],
    });
  });

  it('reads a config file, and verify exits 1 after a placed file was altered on disk', async () => {
    const target = freshTarget();
    const config = join(dirname(target), 'refdata.json');
    writeFileSync(
      config,
      JSON.stringify({
        downloadUrl: sandbox.url,
        apiKey: DEFAULT_API_KEY,
        target,
        products: ['post'],
        countries: ['DE'],
        release: 'release-v3',
        platform: 'linux_x64',
      }),
    );
    expect((await runCli(['sync', '--config', config])).code).toBe(0);
    expect((await runCli(['verify', '--target', target])).code).toBe(0);
    appendFileSync(join(target, '2026-11-01/post/DE/DE_001.zip'), 'x');
    const bad = await runCli(['verify', '--target', target]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).problems[0]).toMatchObject({ path: '2026-11-01/post/DE/DE_001.zip', problem: 'size-differs' });
  });

  it('verify exits 1 naming the file when a placed file is corrupted at the same size (digest, not size)', async () => {
    const target = freshTarget();
    expect((await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    const file = join(target, '2026-11-01/post/AT/AT_001.zip');
    const bytes = readFileSync(file);
    bytes[100] = bytes[100]! ^ 0x01;
    writeFileSync(file, bytes);
    const bad = await runCli(['verify', '--target', target]);
    expect(bad.code).toBe(1);
    const out = JSON.parse(bad.stdout);
    expect(out.ok).toBe(false);
    expect(out.problems).toEqual([expect.objectContaining({ path: '2026-11-01/post/AT/AT_001.zip', problem: 'digest-differs' })]);
    expect(bad.stderr).toContain('2026-11-01/post/AT/AT_001.zip: digest-differs');
  });

  it('verify fails when the manifest is gone (exit 1) and when the target does not exist (exit 2), saying why', async () => {
    const target = freshTarget();
    expect((await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    rmSync(join(target, 'manifest.json'));
    const noManifest = await runCli(['verify', '--target', target]);
    expect(noManifest.code).toBe(1);
    expect(JSON.parse(noManifest.stdout)).toMatchObject({ command: 'verify', ok: false, problems: [{ path: 'manifest.json', problem: 'manifest-missing' }] });
    expect(noManifest.stderr).toMatch(/no manifest\.json in .*run dq-refdata sync/);

    const missing = join(dirname(target), 'no-such-dir');
    const noTarget = await runCli(['verify', '--target', missing]);
    expect(noTarget.code).toBe(2);
    expect(JSON.parse(noTarget.stdout)).toMatchObject({ command: 'verify', status: 'failed', exitCode: 2 });
    expect(noTarget.stderr).toContain(`--target ${missing} does not exist`);
    expect(noTarget.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('sync, verify and status name a manifest.json cut short (not JSON) and say what to do, without a stack trace', async () => {
    const target = freshTarget();
    expect((await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    const manifest = join(target, 'manifest.json');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').slice(0, 300)); // as a crash of an editor leaves it
    for (const args of [
      ['sync', ...flags(target)],
      ['verify', '--target', target],
      ['status', '--target', target],
    ]) {
      const r = await runCli(args, { DQ_API_KEY: DEFAULT_API_KEY });
      expect(r.code, args[0]).toBe(1);
      expect(r.stderr, args[0]).toContain(`${manifest} is not a dq-refdata manifest (not JSON:`);
      expect(r.stderr, args[0]).toContain('move it away to start afresh');
      expect(r.stderr, args[0]).not.toMatch(/\n\s+at /);
      expect(JSON.parse(r.stdout), args[0]).toMatchObject({ command: args[0], exitCode: 1 });
    }
  });

  it('verify fails when the version current points to is not listed in the manifest (hand-edited), instead of passing with nothing checked', async () => {
    const target = freshTarget();
    expect((await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    const path = join(target, 'manifest.json');
    const manifest = JSON.parse(readFileSync(path, 'utf8'));
    delete manifest.versions['2026-11-01'];
    writeFileSync(path, JSON.stringify(manifest));
    const r = await runCli(['verify', '--target', target]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, checked: 0, problems: [{ path: 'current', problem: 'current-pointer' }] });
    expect(r.stderr).toContain(
      'current: current-pointer (points to 2026-11-01, which manifest.json does not list: none of its files can be checked; run dq-refdata sync',
    );
  });

  it('SIGTERM during a sync: exit 75 saying it was interrupted by SIGTERM and that the next sync resumes', async () => {
    const target = freshTarget();
    const counted = downloadRequests(sandbox);
    sandbox.setFaults({ download: { latencyMs: 4000 } });
    try {
      const child = spawn(process.execPath, [CLI_BIN, ...['sync', ...flags(target)]], {
        env: { PATH: process.env['PATH'] ?? '', DQ_API_KEY: DEFAULT_API_KEY },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      // Signalled once it is asking for version.txt, which the sandbox holds back.
      while ((sandbox.stats().concurrent['download']?.now ?? 0) === 0) await new Promise((r) => setTimeout(r, 50));
      child.kill('SIGTERM');
      const code = await new Promise((r) => child.once('close', r));
      expect(code, stderr).toBe(75);
      expect(stderr).toContain('sync interrupted (received SIGTERM); run dq-refdata sync again: verified files are kept and a download cut short resumes');
      expect(JSON.parse(stdout)).toMatchObject({ status: 'failed', exitCode: 75, code: 'interrupted' });
    } finally {
      sandbox.setFaults({});
      // The held-back request is counted only when its delay is over, after the client left: wait
      // for that, so later tests count only their own requests.
      const until = Date.now() + 10_000;
      while (downloadRequests(sandbox) === counted && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('status on a --target that does not exist or is a file is bad usage (exit 2) saying so, as for verify, not an empty success', async () => {
    const missing = join(dirname(freshTarget()), 'no-such-dir');
    const file = join(dirname(freshTarget()), 'a-file');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, 'x');
    for (const [target, says] of [
      [missing, 'does not exist'],
      [file, 'is not a directory'],
    ] as const) {
      const r = await runCli(['status', '--target', target]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--target ${target} ${says}`);
      expect(JSON.parse(r.stdout)).toMatchObject({ command: 'status', status: 'failed', exitCode: 2 });
    }
  });

  it('records manifest paths relative to a target given as ./dir, so verify finds every file (regression)', async () => {
    const target = freshTarget();
    const rel = ['./' + basename(target)];
    const r = await runCli(['sync', ...flags(rel[0] ?? '')], { DQ_API_KEY: DEFAULT_API_KEY }, dirname(target));
    expect(r.code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8'));
    const version = manifest.versions['2026-11-01'];
    expect(version.installer.path).toBe('2026-11-01/installer/setupRefdata_linux_x64.sh');
    for (const f of version.files) expect(f.path.startsWith('2026-11-01/')).toBe(true);
    const verify = await runCli(['verify', '--target', rel[0] ?? ''], {}, dirname(target));
    expect(verify.code).toBe(0);
  });

  it('exits 2 for uws on windows without sending a request, and for an unknown flag', async () => {
    const before = downloadRequests(sandbox);
    const r = await runCli(['sync', ...flags(freshTarget()), '--software', 'uws:windows'], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('uws is only available for linux');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2 });
    expect(downloadRequests(sandbox)).toBe(before);
    expect((await runCli(['sync', '--colour', 'red'])).code).toBe(2);
  });

  it('exits 2 before any request for a flag given an empty value (an unset variable in a script), saying to leave it out', async () => {
    const before = downloadRequests(sandbox);
    const r = await runCli(['sync', ...flags(freshTarget()), '--keep', ''], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('--keep: the value is empty');
    expect(r.stderr).toContain('or leave the flag out');
    expect(downloadRequests(sandbox)).toBe(before);
  });

  it('exits 2 before any request for an API key with a line break (a key file written with echo), not showing the key', async () => {
    const before = downloadRequests(sandbox);
    for (const args of [
      ['sync', ...flags(freshTarget())],
      ['phone-describe', '--realtime-url', sandbox.url, '--target', freshTarget()],
    ]) {
      const r = await runCli(args, { DQ_API_KEY: `${DEFAULT_API_KEY}\n` });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('the API key holds a line break at its end');
      expect(r.stdout + r.stderr).not.toContain(DEFAULT_API_KEY);
    }
    expect(downloadRequests(sandbox)).toBe(before);
  });

  it('exits 3 with a clear message when the API key is refused', async () => {
    const r = await runCli(['sync', ...flags(freshTarget()), '--api-key', 'bad-key-0000']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/API Key Invalid/);
    expect(r.stdout + r.stderr).not.toContain('bad-key-0000');
  });

  it('exits 3 telling the user to renew the plan when its period has passed (downloads and phone-describe alike)', async () => {
    const key = 'expired-plan-key-1';
    const expired = await startSandbox({
      port: 0,
      config: { accounts: [{ id: 'old', apiKeys: [key], plan: { quota: 1000, validUntil: '2020-01-31T23:59:59Z' } }] },
    });
    try {
      const target = freshTarget();
      const sync = await runCli(['sync', ...flags(target).map((f) => (f === sandbox.url ? expired.url : f))], { DQ_API_KEY: key });
      expect(sync.code).toBe(3);
      expect(JSON.parse(sync.stdout)).toMatchObject({ status: 'failed', exitCode: 3, code: 'quota-expired' });
      expect(sync.stderr).toMatch(/renew the prepaid plan/);
      expect(existsSync(target) ? readdirSync(target).filter((f) => !f.startsWith('.')) : []).toEqual([]);
      const describe = await runCli(['phone-describe', '--realtime-url', expired.url, '--target', target], { DQ_API_KEY: key });
      expect(describe.code).toBe(3);
      expect(describe.stderr).toMatch(/prepaid plan period has passed/);
      expect(sync.stdout + sync.stderr + describe.stdout + describe.stderr).not.toContain(key);
    } finally {
      await expired.close();
    }
  });

  it('prints the phone description source as one JSON line', async () => {
    const target = freshTarget();
    const r = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--target', target, '--max-age', '1h'], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      command: 'phone-describe',
      source: 'service',
      parameters: ['language', 'country', 'par_format', 'par_verbosity'],
    });
    const cached = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--target', target], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(JSON.parse(cached.stdout)).toMatchObject({ source: 'cache' });
  });

  it('phone-describe: a relative XDG_CACHE_HOME is ignored (the cache goes under HOME, never into the working folder)', async () => {
    const base = dirname(freshTarget());
    const home = join(base, 'home');
    const work = join(base, 'work');
    mkdirSync(work, { recursive: true });
    const r = await runCli(['phone-describe', '--realtime-url', sandbox.url], { DQ_API_KEY: DEFAULT_API_KEY, HOME: home, XDG_CACHE_HOME: 'relcache' }, work);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ cacheFile: join(home, '.cache', 'dq-refdata', 'phone-describe.json') });
    expect(readdirSync(work)).toEqual([]);
  });

  it('phone-describe: a --cache that cannot be written is named with what to do (exit 2), not a bare EEXIST', async () => {
    const file = join(dirname(freshTarget()), 'a-file');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, 'x');
    const cache = join(file, 'phone-describe.json');
    const r = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', cache], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/cannot write the phone-describe cache .*: a part of its path is not a folder \((EEXIST|ENOTDIR)\)/);
    expect(r.stderr).toContain(cache);
    expect(r.stderr).toContain('give --cache (or --target) a file in a writable folder');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(JSON.parse(r.stdout)).toMatchObject({ command: 'phone-describe', exitCode: 2, code: 'target-not-writable' });
  });

  it("phone-describe: a --cache that is no phone-describe cache (a target's manifest, a shell profile, a named pipe) is refused with exit 2 naming it, left untouched, before any request", async () => {
    const target = freshTarget();
    expect((await runCli(['sync', ...flags(target)], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    const manifest = join(target, 'manifest.json');
    const profile = join(dirname(target), '.bashrc');
    writeFileSync(profile, 'export PATH=$HOME/bin:$PATH\n');
    const pipe = join(dirname(target), 'a-pipe');
    execFileSync('mkfifo', [pipe]);
    const before = (f: string) => readFileSync(f, 'utf8');
    const cases = [
      {
        cache: manifest,
        says: 'is not a phone-describe cache (JSON without the fetchedAt, realtimeUrl and description of a cache)',
        content: before(manifest),
      },
      { cache: profile, says: 'is not a phone-describe cache (not JSON)', content: before(profile) },
      { cache: pipe, says: 'is a named pipe, not a file dq-refdata wrote' },
    ];
    const calls = () => sandbox.stats().requests['phone-describe']?.total ?? 0;
    const callsBefore = calls();
    for (const c of cases) {
      const r = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', c.cache], { DQ_API_KEY: DEFAULT_API_KEY });
      expect(r.code, `${c.cache}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${c.cache} ${c.says}`);
      expect(r.stderr).toContain('give --cache (or --target) a new file name or an existing phone-describe cache');
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(r.stdout)).toMatchObject({ command: 'phone-describe', exitCode: 2 });
      if (c.content !== undefined) expect(before(c.cache)).toBe(c.content);
      expect(readdirSync(dirname(c.cache)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    }
    expect(statSync(pipe).isFIFO()).toBe(true);
    expect(calls()).toBe(callsBefore);
    expect((await runCli(['verify', '--target', target])).code).toBe(0);
    // A cache it wrote is still refreshed in place, also through a symbolic link (which is kept).
    const cache = join(dirname(target), 'describe.json');
    expect((await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', cache], { DQ_API_KEY: DEFAULT_API_KEY })).code).toBe(0);
    const link = join(dirname(target), 'describe-link.json');
    symlinkSync(cache, link);
    const again = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', link, '--max-age', '0s'], { DQ_API_KEY: DEFAULT_API_KEY });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ source: 'service' });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(cache, 'utf8')).fetchedAt).toBe(JSON.parse(again.stdout).fetchedAt);
  });

  it('a country that is no ISO code (de, XX), or a subscription with nothing offered, is refused before any request (exit 2), not synced as an empty version with exit 0', async () => {
    const requests = downloadRequests(sandbox);
    const cases = [
      { countries: 'DE,de', products: 'post', says: 'countries: "de" must be an upper-case ISO 3166-1 alpha-2 code, WORLD or one of INT_' },
      { countries: 'XX', products: 'post,phone', says: 'countries: "XX" must be an upper-case ISO 3166-1 alpha-2 code' },
      {
        countries: 'INT_EUROPE',
        products: 'autocompletion,phone',
        says: 'nothing to download: the contract offers none of autocompletion/INT_EUROPE, phone/INT_EUROPE',
      },
    ];
    for (const c of cases) {
      const target = freshTarget();
      const args = flags(target).map((f, i, all) => (all[i - 1] === '--countries' ? c.countries : all[i - 1] === '--products' ? c.products : f));
      const r = await runCli(['sync', ...args], { DQ_API_KEY: DEFAULT_API_KEY });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(c.says);
      expect(existsSync(target)).toBe(false);
    }
    expect(downloadRequests(sandbox)).toBe(requests);
  });

  it('a --realtime-url or --download-url that is not an http(s) URL is bad usage naming it (exit 2), for the flag and the variable', async () => {
    for (const [args, env] of [
      [['--realtime-url', 'not-a-url'], {}],
      [['--realtime-url', 'ftp://example.com'], {}],
      [[], { DQ_REALTIME_URL: 'localhost:8080' }],
    ] as const) {
      const r = await runCli(['phone-describe', ...args, '--cache', join(dirname(freshTarget()), 'c.json')], { DQ_API_KEY: DEFAULT_API_KEY, ...env });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /--realtime-url \(or DQ_REALTIME_URL\) must be an http\(s\) URL such as https:\/\/api\.example\.com; got "(not-a-url|ftp:\/\/example\.com|localhost:8080)"/,
      );
      expect(JSON.parse(r.stdout)).toMatchObject({ command: 'phone-describe', exitCode: 2, code: 'usage' });
    }
    const requests = downloadRequests(sandbox);
    for (const url of ['localhost:8080', 'ftp://example.com']) {
      const target = freshTarget();
      const r = await runCli(['sync', ...flags(target).map((f) => (f === sandbox.url ? url : f))], { DQ_API_KEY: DEFAULT_API_KEY });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('invalid sync configuration: downloadUrl: must be an http(s) URL such as https://download.example.com');
      expect(existsSync(target)).toBe(false); // refused before the target was touched
    }
    expect(downloadRequests(sandbox)).toBe(requests);
  });

  it('settings not given at all are named as missing, with the flag or variable that gives them', async () => {
    const target = freshTarget();
    const without = (name: string) => {
      const f = flags(target);
      const i = f.indexOf(name);
      return [...f.slice(0, i), ...f.slice(i + 2)];
    };
    const r = await runCli(['sync', ...without('--products')], {});
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      'invalid sync configuration: the API key is missing: set DQ_API_KEY (or give --api-key); products: required (give "products" in the config file, or --products)',
    );
    expect(existsSync(target)).toBe(false);
  });

  describe('config file and environment', () => {
    const fileConfig = (target: string, extra: Record<string, unknown>) => {
      const config = join(dirname(target), `refdata-${basename(target)}.json`);
      mkdirSync(dirname(config), { recursive: true });
      const body = { target, products: 'post', countries: 'DE', release: 'release-v3', platform: 'linux_x64', ...extra };
      writeFileSync(config, JSON.stringify(body));
      return config;
    };

    it('a count that is no number in the config file ("keep": true, [3], "0x2") is refused naming it (exit 2), not taken as 1 (which removes every other version)', async () => {
      const before = downloadRequests(sandbox);
      for (const keep of [true, [3], '0x2']) {
        const target = freshTarget();
        const r = await runCli(['sync', '--config', fileConfig(target, { keep })], { DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });
        expect(r.code, `${JSON.stringify(keep)}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain('keep: must be a number such as 2');
        expect(existsSync(target)).toBe(false);
      }
      expect(downloadRequests(sandbox)).toBe(before);
    });

    it('a target or cache starting with "~" (no shell expanded it) is refused naming it (exit 2): no folder "~" made in the working folder', async () => {
      const work = dirname(freshTarget());
      mkdirSync(work, { recursive: true });
      const env = { DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url };
      const runs = [
        await runCli(['sync', '--config', fileConfig(join(work, 'x'), { target: '~/refdata' })], env, work),
        await runCli([...syncFlags('~/refdata')], env, work),
        await runCli(['verify', '--target', '~/refdata'], env, work),
        await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', '~/describe.json'], env, work),
      ];
      for (const r of runs) {
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/~\/(refdata|describe\.json): the "~" was not expanded .*give the full path/);
      }
      expect(readdirSync(work).filter((f) => !f.endsWith('.json'))).toEqual([]);
    });

    it('a config file written with a byte order mark (a Windows editor) is read', async () => {
      const target = freshTarget();
      const config = fileConfig(target, {});
      writeFileSync(config, `\uFEFF${readFileSync(config, 'utf8')}`);
      const r = await runCli(['sync', '--config', config], { DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'updated', downloaded: ['2026-11-01/post/DE/DE_001.zip'] });
    });

    it('DQ_DOWNLOAD_URL and DQ_API_KEY stand in for the flags: both win over a config file that says otherwise, with a warning naming it (never the key)', async () => {
      const other = await sandboxWith({}, 12);
      try {
        const target = freshTarget();
        const config = fileConfig(target, { downloadUrl: other.url, apiKey: 'a-key-from-the-file' });
        const r = await runCli(['sync', '--config', config], { DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });
        expect(r.code, r.stderr).toBe(0);
        expect(downloadRequests(other)).toBe(0);
        expect(r.stderr).toContain(`warning: DQ_DOWNLOAD_URL is used, not "downloadUrl" of ${config} ("${other.url}")`);
        expect(r.stderr).toContain(`warning: DQ_API_KEY is used, not "apiKey" of ${config} (another API key)`);
        expect(r.stdout + r.stderr).not.toContain('a-key-from-the-file');
        expect(r.stdout + r.stderr).not.toContain(DEFAULT_API_KEY);
      } finally {
        await other.close();
      }
    });
  });
});
