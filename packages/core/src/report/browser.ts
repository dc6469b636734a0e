/**
 * The headless browser that renders run reports (the demo's screenshot, the browser tests):
 * Debian's `chromium` driven over the DevTools protocol by puppeteer-core, which downloads no
 * browser of its own. Kept apart from the renderer (its own export, `@dq/core/report-browser`) so
 * that writing a report never loads puppeteer.
 */
import { access, constants } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';
import type { Browser } from 'puppeteer-core';

export type { Browser, Page } from 'puppeteer-core';

/** Where the browser is looked for: `DQ_CHROMIUM`, then Debian's and other usual paths. */
export const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The chromium executable, or an error saying how to install it. */
export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const candidates = env['DQ_CHROMIUM'] ? [env['DQ_CHROMIUM']] : CHROMIUM_PATHS;
  for (const path of candidates) {
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {
      // next
    }
  }
  throw new Error(
    `no headless chromium found (looked at ${candidates.join(', ')}): install it with "apt-get install chromium" (.ci/run does), or set DQ_CHROMIUM to its path`,
  );
}

/** Starts headless chromium; close it with `browser.close()`. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await findChromium();
  return puppeteer.launch({
    executablePath,
    headless: true,
    // --no-sandbox: the CI runs as root, where chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
}

/** Renders the HTML file `htmlPath` and saves a full-page PNG of it at `pngPath`. */
export async function screenshotReport(htmlPath: string, pngPath: string, width = 1100): Promise<void> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
    await page.goto(`file://${htmlPath}`, { waitUntil: 'load' });
    await page.screenshot({ path: pngPath as `${string}.png`, fullPage: true });
  } finally {
    await browser.close();
  }
}

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
export async function openReport(browser: Browser, file: string): Promise<LoadedReport> {
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
    // Runs in the page (a string: this package compiles without the DOM's types).
    const seen = (await page.evaluate(`(() => {
      const collect = (attr) => {
        const out = {};
        for (const el of document.querySelectorAll('[' + attr + ']')) {
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
    })()`)) as Omit<LoadedReport, 'consoleErrors' | 'requests'>;
    return { ...seen, consoleErrors, requests };
  } finally {
    await page.close();
  }
}
