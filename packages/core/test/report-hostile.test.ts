import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedactor } from '@dq/core/log';
import { renderReport, writeReport } from '@dq/core/report';
import type { ReportPage } from '@dq/core/report';
import type { Browser } from '@dq/core/report-browser';
import { launchChromium, openReport } from '@dq/core/report-browser';

/** Text that would run, load or break out of markup if it reached the page as markup. */
const HOSTILE = [
  '<script>window.pwned=1;document.title="pwned"</script>',
  '</script><script>window.pwned=2</script>',
  '<!-- ]]> --><img src=x onerror="window.pwned=3">',
  '" onmouseover="window.pwned=4" x="',
  "' autofocus onfocus='window.pwned=5' x='",
  '</style><style>body{display:none}</style>',
  '<a href="javascript:window.pwned=6">click</a>',
  '<svg><script>window.pwned=7</script></svg>',
  '<![CDATA[<img src=x onerror=window.pwned=8>]]>',
  '<link rel="stylesheet" href="https://evil.example/x.css">',
  'line\u2028sep\u2029para',
  '😀 Straße 👩‍👩‍👧 5',
  '&amp; &lt;b&gt; &#60;i&#62;',
];

let launched: Promise<Browser> | undefined;
/** Chromium, started by the test on first use: when it is missing, every test fails saying how to install it (nothing is skipped). */
const chromium = (): Promise<Browser> => (launched ??= launchChromium());
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-report-hostile-'));
});
afterAll(async () => {
  await (await launched?.catch(() => undefined))?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A page with `value` in every place a value of the data reaches, and the given numbers. */
function pageWith(value: string, numbers: Partial<Record<'rows' | 'accepted' | 'classA' | 'changed' | 'rate', number>> = {}): ReportPage {
  const example = { where: `line 2 ${value}`, before: value, after: `after ${value}`, text: value, requestId: `req ${value}` };
  return {
    tool: 'dq-csv validate',
    subject: `in/${value}.csv`,
    run: `out/${value}.csv`,
    generatedAt: value,
    summary: {
      event: 'summary',
      outcome: value,
      exitCode: 3,
      rows: numbers.rows ?? 7,
      rejects: 1,
      byStatus: { accepted: numbers.accepted ?? 3, review: 2, [value]: 1 },
      byClass: { A: numbers.classA ?? 2, D: 1, [value]: 1 },
      apiCalls: 5,
      failedShare: 0.125,
      error: { code: value, message: `the platform said: ${value}`, requestId: `req-${value}` },
    },
    details: {
      corrections: { rows: numbers.changed ?? 1, note: value, fields: [{ field: value, changed: numbers.changed ?? 1, examples: [example] }] },
      review: { count: 2, byClass: { D: 1, [value]: 1 }, command: `dq-csv review export --input '${value}'`, examples: [example] },
      failures: [{ code: value, count: 1, requestIds: [value], examples: [example] }],
      rejects: [{ code: value, count: 1, requestIds: [], examples: [example] }],
      conflicts: { count: 1, command: value, keys: [value] },
      rate: { startSecond: 1_790_000_000, bucketSeconds: 1, counts: [3, numbers.rate ?? 2, 1], limit: 100 },
      notes: [value],
    },
  };
}

/** What the page did in the browser beyond openReport's view: globals an injected script would set, the title. */
async function ranInPage(browser: Browser, file: string, probe: string): Promise<unknown> {
  const page = await browser.newPage();
  try {
    await page.setRequestInterception(true);
    const url = pathToFileURL(file).href;
    page.on('request', (r) => void (r.url() === url ? r.continue() : r.abort()));
    await page.setViewport({ width: 375, height: 800 });
    await page.goto(url, { waitUntil: 'load' });
    // Focus and hover everything, so that an injected handler would have had its event.
    await page.evaluate(`for (const el of document.querySelectorAll('*')) { el.focus?.(); el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true })); }`);
    return await page.evaluate(probe);
  } finally {
    await page.close();
  }
}

describe('run report with hostile values', () => {
  it('shows every hostile value as text in every place, runs nothing, loads nothing, logs no error', async () => {
    const browser = await chromium();
    for (const [i, value] of HOSTILE.entries()) {
      const file = join(dir, `hostile-${i}.html`);
      await writeReport(file, pageWith(value));
      const seen = await openReport(browser, file);
      expect(seen.scripts, value).toBe(0);
      expect(seen.requests, value).toEqual([]);
      expect(seen.consoleErrors, value).toEqual([]);
      expect(seen.overflowsPhone, value).toBe(false);
      // innerText writes a line or paragraph separator as a space in some places: compared as one.
      const spaced = (t: string) => t.replace(/[\u2028\u2029]/g, ' ');
      for (const shown of [`in/${value}.csv`, `the platform said: ${value}`, `after ${value}`, `req-${value}`, `dq-csv review export --input '${value}'`])
        expect(spaced(seen.text), value).toContain(spaced(shown));
      const ran = (await ranInPage(browser, file, '[window.pwned ?? null, document.title, getComputedStyle(document.body).display]')) as unknown[];
      expect(ran, value).toEqual([null, `dq-csv validate report: in/${value}.csv`, 'block']);
      expect(seen.metrics['error.code'], value).toEqual([value]);
    }
  });

  it('keeps a bidi override (U+202E) inside its value: the text after it reads left to right', async () => {
    const file = join(dir, 'bidi.html');
    const page = pageWith('Hauptstr\u202E');
    page.details.corrections!.fields[0]!.examples = [{ where: 'line 2', before: 'Hauptstr\u202E', after: 'Bahnhofstr' }];
    page.summary['error'] = { code: 'c', message: 'refused\u202E', requestId: 'req-12345' };
    await writeReport(file, page);
    // Left edge of the first and of the last character of a text: a reversed text has them the other way round.
    const edges = (text: string) => `(() => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const at = n.data.indexOf(${JSON.stringify(text)});
        if (at < 0) continue;
        const r = document.createRange();
        r.setStart(n, at); r.setEnd(n, at + 1);
        const first = r.getBoundingClientRect().left;
        r.setStart(n, at + ${text.length - 1}); r.setEnd(n, at + ${text.length});
        return [first, r.getBoundingClientRect().left];
      }
      return null;
    })()`;
    const browser = await chromium();
    const after = (await ranInPage(browser, file, edges('Bahnhofstr'))) as [number, number];
    expect(after[0], 'the after value of a correction is written reversed').toBeLessThan(after[1]);
    const id = (await ranInPage(browser, file, edges('req-12345'))) as [number, number];
    expect(id[0], 'the request id after a message is written reversed').toBeLessThan(id[1]);
  });

  it('keeps the spaces of a value: a correction that trimmed or joined spaces does not look like no change', async () => {
    const file = join(dir, 'spaces.html');
    const page = pageWith('x');
    page.details.corrections!.fields[0]!.examples = [{ where: 'line 2', before: ' Haupt  str ', after: 'Haupt str' }];
    await writeReport(file, page);
    const shown = await ranInPage(await chromium(), file, `[...document.querySelectorAll('del bdi')].map((e) => e.innerText)`);
    expect(shown).toContain(' Haupt  str ');
  });

  it('shows a NUL, other controls and lone surrogates by a visible stand-in, in a page that is valid UTF-8', async () => {
    const file = join(dir, 'controls.html');
    await writeReport(file, pageWith('a\u0000b\u001bc\u007fd\uD800e\uDFFFf\u0085g'));
    const html = await readFile(file);
    expect(html.toString('utf8')).not.toMatch(/[\u0000-\u0008\u000B\u000E-\u001F\u007F-\u009F]/);
    expect(Buffer.from(html.toString('utf8'), 'utf8').equals(html)).toBe(true);
    const seen = await openReport(await chromium(), file);
    expect(seen.consoleErrors).toEqual([]);
    expect(seen.text).toContain('the platform said: a\u2400b\u241bc\u2421d\uFFFDe\uFFFDf\uFFFDg');
  });

  it('draws NaN, Infinity, negative and huge counts without an SVG error, and a bad start time without failing', async () => {
    const browser = await chromium();
    for (const n of [NaN, Infinity, -Infinity, -5, 1e300, Number.MAX_SAFE_INTEGER + 2]) {
      const page = pageWith('Hauptstr. 5', { rows: n, accepted: n, classA: n, changed: n, rate: n });
      const file = join(dir, `number-${String(n)}.html`);
      await writeReport(file, page);
      const seen = await openReport(browser, file);
      expect(seen.consoleErrors, String(n)).toEqual([]);
      expect(seen.overflowsPhone, String(n)).toBe(false);
      expect(seen.metrics['rows'], String(n)).toEqual([String(n)]);
    }
    const page = pageWith('x');
    page.details.rate = { startSecond: NaN, bucketSeconds: 1, counts: [1, 2], limit: NaN };
    expect(() => renderReport(page)).not.toThrow();
  });

  it('shows the count of a status or class whatever its name (a dot, __proto__, constructor)', async () => {
    const file = join(dir, 'keys.html');
    const page = pageWith('x');
    page.summary['byClass'] = JSON.parse('{"A.1": 3, "__proto__": 4, "constructor": 5, "toString": 6}') as Record<string, number>;
    await writeReport(file, page);
    const seen = await openReport(await chromium(), file);
    expect(seen.consoleErrors).toEqual([]);
    expect(seen.metrics['byClass.A.1']).toEqual(['3']);
    expect(seen.metrics['byClass.__proto__']).toEqual(['4']);
    expect(seen.metrics['byClass.constructor']).toEqual(['5']);
    expect(seen.metrics['byClass.toString']).toEqual(['6']);
    expect(await readFile(file, 'utf8')).not.toContain('fill="function');
  });

  it('redacts a key that holds HTML characters, and redaction never eats the markup next to a value', async () => {
    const key = `k3y'&<"x>Z9`;
    const redactor = createRedactor([key]);
    const file = join(dir, 'secret.html');
    const page = pageWith('x');
    page.summary['error'] = { code: 'unauthorized', message: `the key ${key} was refused`, requestId: 'req-1' };
    page.details.corrections!.fields[0]!.examples = [{ where: 'line 2', before: 'pwd=', after: 'Bahnhofstr' }];
    page.summary['outcome'] = '@x://u:p';
    await writeReport(file, page, (t) => redactor.redact(t));
    const seen = await openReport(await chromium(), file);
    expect(seen.text).not.toContain(key);
    expect(seen.text).toContain('the key [redacted] was refused');
    expect(await readFile(file, 'utf8')).not.toContain('k3y');
    // The after value of the example is its own, not struck through with the before one.
    const struck = await ranInPage(await chromium(), file, `[...document.querySelectorAll('#corrections del ins')].length`);
    expect(struck).toBe(0);
    expect(seen.text).toContain('Bahnhofstr');
    expect(seen.metrics['outcome']).toEqual(['@x://u:p']);
  });
});
