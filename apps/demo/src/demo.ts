import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, ExitCode } from '@dq/core';
import { createProgress, processFile, summaryJson, summaryTable, writeCsvReport } from '@dq/csv-processor';
import { DEFAULT_API_KEY, SAMPLE_MAP, startSandbox } from '@dq/sandbox';

/**
 * `npm run demo`: starts the sandbox on a free local port, cleans the shipped sample of dirty
 * German addresses with it, prints the summary and where the output is. No network needed.
 */
async function demo(): Promise<number> {
  const input = fileURLToPath(new URL('../addresses.csv', import.meta.url));
  const folder = await mkdtemp(join(tmpdir(), 'dq-csv-demo-'));
  const output = join(folder, 'addresses.cleaned.csv');
  const sandbox = await startSandbox({ port: 0 });
  process.stderr.write(`sandbox listening on ${sandbox.url}\ncleaning ${input}\n`);
  try {
    const summary = await processFile({
      input,
      output,
      delimiter: ';',
      mode: 'address',
      map: SAMPLE_MAP,
      country: 'DE',
      include: ['coordinates-wgs84'],
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      report: join(folder, 'report.html'),
      progress: createProgress({ stream: process.stderr }),
      logger: createLogger({ level: 'warn' }),
    });
    process.stdout.write(summaryTable(summary));
    process.stdout.write(summaryJson(summary) + '\n');
    process.stdout.write(`\ncleaned file: ${summary.paths.output}\nrejects:      ${summary.paths.rejects}\n`);
    await writeCsvReport(join(folder, 'report.html'), summary, (t) => t);
    const shot = await import('@dq/core/report-browser')
      .then((b) => b.screenshotReport(join(folder, 'report.html'), join(folder, 'report.png')))
      .then(
        () => join(folder, 'report.png'),
        (e: unknown) => `none (${(e as Error).message})`,
      );
    process.stdout.write(`report:       ${join(folder, 'report.html')}\nscreenshot:   ${shot}\n`);
    return summary.exitCode;
  } finally {
    await sandbox.close();
  }
}

process.exitCode = await demo().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error)?.stack ?? String(err)}\n`);
  return ExitCode.UNEXPECTED;
});
