import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// The built bin, as `npx dq-sandbox` runs it (build first: npx tsc -b tools/sandbox).
const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function run(args: string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, [BIN, ...args]);
  children.push(child);
  return child;
}

async function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  return line;
}

/** Runs the bin to completion; returns exit code and output. */
async function complete(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = run(args);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

describe('dq-sandbox CLI', () => {
  it('prints its URL as the first line, serves requests, and exits 0 on SIGTERM', async () => {
    const child = run(['--port', '0', '--seed', '3']);
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const r = await fetch(`${url}/location/v1/start-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer dq-sandbox-key' },
      body: '{"country":"DE"}',
    });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  });

  it('exits 0 on SIGINT too, and no longer accepts connections', async () => {
    const child = run(['--port', '0']);
    const url = await firstLine(child);
    const exited = once(child, 'exit');
    child.kill('SIGINT');
    expect((await exited)[0]).toBe(0);
    await expect(fetch(`${url}/__admin/stats`)).rejects.toThrow();
  });

  it('shows usage with --help and exits 0', async () => {
    const { code, stdout } = await complete(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: dq-sandbox [--port N] [--host 127.0.0.1] [--config accounts.json] [--seed N]');
  });

  it('exits 2 with a message for an unknown flag or a bad port', async () => {
    const unknown = await complete(['--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--bogus');
    const port = await complete(['--port', 'eighty']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--port must be an integer');
    expect((await complete(['--port', '70000'])).code).toBe(2);
  });

  it('exits 2 naming the field for a bad config file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dq-sandbox-cli-'));
    try {
      const path = join(dir, 'accounts.json');
      await writeFile(path, JSON.stringify({ accounts: [{ id: 'a', apiKeys: ['key-aaaaaaa'], services: ['telex'] }] }));
      const { code, stderr, stdout } = await complete(['--config', path]);
      expect(code).toBe(2);
      expect(stderr).toContain('accounts.0.services.0');
      expect(stdout).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts with a config file and serves its accounts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dq-sandbox-cli-'));
    try {
      const path = join(dir, 'accounts.json');
      await writeFile(path, JSON.stringify({ accounts: [{ id: 'a', apiKeys: ['cli-key-aaaaaa'] }] }));
      const child = run(['--config', path, '--port', '0']);
      const url = await firstLine(child);
      const ok = await fetch(`${url}/rest/describe/phone_number_analysis/analyse_phone`, { headers: { 'x-auth-token': 'cli-key-aaaaaa' } });
      expect(ok.status).toBe(200);
      const old = await fetch(`${url}/rest/describe/phone_number_analysis/analyse_phone`, { headers: { 'x-auth-token': 'dq-sandbox-key' } });
      expect(old.status).toBe(401);
      await Promise.all([ok.arrayBuffer(), old.arrayBuffer()]);
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
