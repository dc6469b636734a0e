import { writeWholeFile } from '../files/whole-file.js';
import { renderReport } from './render.js';
import type { ReportPage } from './model.js';

/**
 * Renders `page` and writes it to `path` whole ({@link writeWholeFile}: never half a page, a
 * device such as `/dev/null` written in place, a result store's file refused), every text of the
 * page passed through `redact` (a connector's log redactor: no key, no password) before it is
 * escaped into the page (see {@link renderReport}).
 *
 * @throws WholeFileError when the path may not or cannot be written.
 */
export async function writeReport(path: string, page: ReportPage, redact: (text: string) => string = (t) => t): Promise<void> {
  const text = renderReport(page, redact);
  await writeWholeFile(path, (handle) => handle.writeFile(text, 'utf8'));
}
