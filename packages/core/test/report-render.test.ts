import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport, writeReport } from '@dq/core/report';
import type { ReportPage } from '@dq/core/report';
import type { Browser } from '@dq/core/report-browser';
import { launchChromium, openReport as loadReport } from '@dq/core/report-browser';

const EVIL = '<script>document.title="pwned"</script><img src="https://evil.example/x.png">';

function page(): ReportPage {
  return {
    tool: 'dq-csv validate',
    subject: `in/${EVIL}.csv`,
    run: 'out.csv',
    generatedAt: '2026-11-24T00:00:00Z',
    summary: {
      event: 'summary',
      outcome: 'done',
      exitCode: 0,
      rows: 7,
      rejects: 1,
      byStatus: { accepted: 3, review: 2, invalid: 1, 'invalid-input': 1, 'unsupported-country': 0, unavailable: 0 },
      byClass: { A: 2, B: 1, C: 0, D: 1, E: 1, F: 1 },
      apiCalls: 5,
      callsSavedByDedup: 1,
      callsSavedByCache: 0,
      callsSavedByStore: 4,
      storeHitRate: 0.25,
      retries: 0,
      failedShare: 0.125,
      durationMs: 1234,
    },
    details: {
      corrections: { rows: 2, fields: [{ field: 'street', changed: 2, examples: [{ where: 'line 2', before: EVIL, after: 'Hauptstraße & Co "x"' }] }] },
      review: {
        count: 2,
        byClass: { D: 1, E: 1 },
        command: 'dq-csv review export --input out.csv --output review.csv',
        examples: [{ where: 'line 4', before: EVIL, after: 'x' }],
      },
      failures: [{ code: 'field-error', count: 1, requestIds: ['req-<b>1</b>'], examples: [{ where: 'line 5', text: EVIL }] }],
      rejects: [{ code: 'column-count', count: 1, requestIds: [], examples: [{ where: 'line 6', text: 'expected 4 columns' }] }],
      rate: { startSecond: 1_790_000_000, bucketSeconds: 1, counts: [3, 2], limit: 100 },
    },
  };
}

let launched: Promise<Browser> | undefined;
/** Chromium, started by the test on first use: when it is missing, every test fails saying how to install it (nothing is skipped). */
const chromium = (): Promise<Browser> => (launched ??= launchChromium());
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-report-'));
});
afterAll(async () => {
  await (await launched?.catch(() => undefined))?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('run report page', () => {
  it('renders user values as text: a <script> or an <img> in an address runs nothing and loads nothing', async () => {
    const file = join(dir, 'evil.html');
    await writeReport(file, page());
    const seen = await loadReport(await chromium(), file);
    expect(seen.scripts).toBe(0);
    expect(seen.requests).toEqual([]);
    expect(seen.consoleErrors).toEqual([]);
    expect(seen.text).toContain('<script>document.title="pwned"</script>');
    expect(seen.text).toContain('Hauptstraße & Co "x"');
    expect(seen.text).toContain('req-<b>1</b>');
    expect(seen.overflowsPhone).toBe(false);
    const html = await readFile(file, 'utf8');
    expect(html).not.toMatch(/https?:\/\/(?!evil)/); // no external resource of our own
  });

  it('marks every summary number with its path and exact value, store fields included when present', async () => {
    const file = join(dir, 'metrics.html');
    await writeReport(file, page());
    const { metrics, details } = await loadReport(await chromium(), file);
    expect(metrics['rows']).toContain('7');
    expect(metrics['byStatus.review']).toContain('2');
    expect(metrics['byClass.F']).toContain('1');
    expect(metrics['callsSavedByStore']).toContain('4');
    expect(metrics['storeHitRate']).toContain('0.25');
    expect(details['corrections.street']).toEqual(['2']);
    expect(details['rate.calls']).toEqual(['5']);
    expect(details['rate.limit']).toEqual(['100']);
    const without = renderReport({ ...page(), summary: { ...page().summary, callsSavedByStore: undefined, storeHitRate: undefined } });
    expect(without).not.toContain('data-metric="callsSavedByStore"');
  });
});
