import { pathToFileURL } from 'node:url';
import { launchChromium } from '@dq/core/report-browser';
import type { Browser } from '@dq/core/report-browser';

/** What a report looked like in the browser. */
export interface LoadedReport {
  /** Every `data-metric` element: path → the number (or text) it carries. */
  metrics: Record<string, string[]>;
  details: Record<string, string[]>;
  text: string;
  consoleErrors: string[];
  /** Requests other than the page itself (each one is refused). */
  requests: string[];
  scripts: number;
  /** Page wider than the viewport on a phone. */
  overflowsPhone: boolean;
}

/**
 * Opens the report file in headless chromium with request interception: the page itself is the
 * only request allowed; any other is refused and recorded.
 */
export async function loadReport(browser: Browser, file: string): Promise<LoadedReport> {
  const url = pathToFileURL(file).href;
  const page = await browser.newPage();
  try {
    const consoleErrors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url() === url) void r.continue();
      else {
        requests.push(r.url());
        void r.abort();
      }
    });
    await page.setViewport({ width: 375, height: 800 });
    await page.goto(url, { waitUntil: 'load' });
    const seen = await page.evaluate(() => {
      const collect = (attr: string): Record<string, string[]> => {
        const out: Record<string, string[]> = {};
        for (const el of Array.from(document.querySelectorAll(`[${attr}]`))) {
          const k = el.getAttribute(attr) ?? '';
          (out[k] ??= []).push(el.getAttribute('data-value') ?? '');
        }
        return out;
      };
      return {
        metrics: collect('data-metric'),
        details: collect('data-detail'),
        text: document.body.innerText,
        scripts: document.querySelectorAll('script').length,
        overflowsPhone: document.documentElement.scrollWidth > window.innerWidth + 1,
      };
    });
    return { ...seen, consoleErrors, requests };
  } finally {
    await page.close();
  }
}

export { launchChromium };
