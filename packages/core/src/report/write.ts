import { rename, writeFile } from 'node:fs/promises';
import { renderReport } from './render.js';
import type { ReportPage } from './model.js';

/**
 * Renders `page` and writes it to `path` (a temp file renamed into place: never half a page),
 * the whole text passed through `redact` (a connector's log redactor: no key, no password).
 */
export async function writeReport(path: string, page: ReportPage, redact: (text: string) => string = (t) => t): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, redact(renderReport(page)), 'utf8');
  await rename(tmp, path);
}
