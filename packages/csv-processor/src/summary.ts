import { ExitCode, type BudgetReport } from '@dq/core';
import type { RunSummary } from './run.js';

/**
 * The one-line JSON summary printed at the end of every run (stdout). `peakRssMb` is the peak
 * resident memory of this process (all its threads) so far, in MiB.
 */
export function summaryJson(summary: RunSummary): string {
  return JSON.stringify(summaryObject(summary));
}

/** The object {@link summaryJson} prints (the run report renders its numbers from it). */
export function summaryObject(summary: RunSummary): Record<string, unknown> {
  const { totals, paths } = summary;
  return {
    event: 'summary',
    outcome: summary.outcome,
    exitCode: summary.exitCode,
    rows: totals.rows,
    rejects: totals.rejects,
    byStatus: totals.byStatus,
    byClass: totals.byClass,
    apiCalls: totals.apiCalls,
    callsSavedByDedup: totals.callsSavedByDedup,
    callsSavedByCache: totals.callsSavedByCache,
    callsSavedByStore: totals.callsSavedByStore,
    storeHitRate: storeHitRate(totals),
    retries: totals.retries,
    failedShare: roundShare(summary.failedShare, 4),
    durationMs: totals.durationMs,
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    runs: totals.runs,
    resumed: summary.resumed,
    // A dry run (also one a stop signal ended) writes no file: its plan so far instead of paths.
    ...(summary.plan !== undefined
      ? { plan: { ...summary.plan, totals: undefined, interrupted: undefined } }
      : { output: paths.output, rejectsFile: paths.rejects }),
    ...(summary.budget ? { budget: summary.budget } : {}),
    ...(summary.outcome === 'stopped' && summary.checkpoint !== undefined ? { checkpoint: summary.checkpoint } : {}),
    ...(summary.error ? { error: summary.error } : {}),
  };
}

/** A table for people (printed on a TTY). */
export function summaryTable(summary: RunSummary): string {
  const { totals } = summary;
  const n = (x: number) => x.toLocaleString('en');
  const lines: [string, string][] = [
    ['rows', n(totals.rows)],
    ['rejected rows', n(totals.rejects)],
  ];
  if (summary.plan) {
    const p = summary.plan;
    lines.push(
      ['invalid input (no call)', n(p.invalidInput)],
      ['distinct inputs', n(p.distinct)],
      ['answered by the store', n(p.fromStore)],
      ['API calls needed', n(p.calls)],
    );
    lines.push([
      'time at rate limit',
      p.secondsAtRateLimit === undefined ? 'unknown (no published limit)' : `${n(p.secondsAtRateLimit)} s at ${p.rateLimitPerSecond}/s`,
    ]);
  } else {
    for (const [status, count] of Object.entries(totals.byStatus)) lines.push([`  ${status}`, n(count)]);
    const classes = Object.entries(totals.byClass)
      .filter(([, c]) => c > 0)
      .map(([k, c]) => `${k} ${n(c)}`)
      .join('  ');
    if (classes) lines.push(['result classes', classes]);
    lines.push(
      ['API calls', n(totals.apiCalls)],
      ['calls saved', `${n(totals.callsSavedByDedup)} by dedup, ${n(totals.callsSavedByCache)} by cache, ${n(totals.callsSavedByStore)} by the store`],
      ['store hit rate', `${(storeHitRate(totals) * 100).toFixed(1)} %`],
      ['retries', n(totals.retries)],
      ...(summary.budget ? budgetLines(summary.budget) : []),
      ['duration', `${(totals.durationMs / 1000).toFixed(1)} s${totals.runs > 1 ? ` over ${totals.runs} runs` : ''}`],
      ['output', summary.paths.output],
      ['rejects', summary.paths.rejects],
    );
  }
  const width = Math.max(...lines.map(([k]) => k.length));
  return lines.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n') + '\n';
}

/** Share of the inputs looked up in the result store that it answered, over all runs of the file. */
function storeHitRate(totals: RunSummary['totals']): number {
  return totals.storeLookups > 0 ? Number((totals.storeHits / totals.storeLookups).toFixed(4)) : 0;
}

/** The rate budget and the spending cap, as table lines. */
function budgetLines(b: BudgetReport): [string, string][] {
  const n = (x: number) => x.toLocaleString('en');
  return [
    ['rate budget', b.scope === 'shared' ? `shared by every process of account ${b.account}` : 'this process only'],
    ['billable calls', b.maxCalls === null ? n(b.billableCalls) : `${n(b.billableCalls)} of --max-calls ${n(b.maxCalls)}`],
  ];
}

/**
 * The line on stderr of a run that completed with more failed records than `--max-failed` allows
 * (exit 4), or with no answerable record answered (exit 75): the counts, where the rows are and
 * what to do, for a scheduler's log, which may not keep the JSON summary on stdout. Undefined for
 * any other run.
 */
export function failedRecordsLine(summary: RunSummary, maxFailed: number): string | undefined {
  if (summary.outcome === 'done' && !summary.error && summary.exitCode === ExitCode.TEMPFAIL) return unavailableLine(summary);
  if (summary.outcome !== 'done' || summary.error || summary.exitCode !== ExitCode.MAX_FAILED) return undefined;
  const { rows, rejects, byStatus } = summary.totals;
  const unavailable = byStatus.unavailable;
  const percent = roundShare(summary.failedShare * 100, 1);
  const todo =
    rows === 0
      ? 'no record could be read: check --format, --delimiter and --encoding against the input'
      : 'correct the rejected lines in the input and rerun; rows marked unavailable got no answer: rerun later';
  return (
    `dq-csv: records-failed: ${rejects + unavailable} of ${rows + rejects} input records failed (${rejects} rejected, in ${summary.paths.rejects}, ` +
    `with line and reason; ${unavailable} unavailable): ${percent}% is over --max-failed ${maxFailed}; ${todo}\n`
  );
}

/** The line of a run that read every record but got no usable answer for any it could ask about (exit 75). */
function unavailableLine(summary: RunSummary): string {
  const { byStatus } = summary.totals;
  // The records no answer could help: of a country the platform has no data for, or invalid input.
  const others = [
    [byStatus['unsupported-country'] ?? 0, 'of a country the platform has no reference data for'],
    [byStatus['invalid-input'], 'invalid input'],
  ].filter(([n]) => (n as number) > 0);
  const rest = others.length === 0 ? '' : `; the others are ${others.map(([n, what]) => `${n} ${what}`).join(' and ')}`;
  return (
    `dq-csv: records-unavailable: none of the ${byStatus.unavailable} records the platform could answer got a usable answer${rest} ` +
    `(marked unavailable in ${summary.paths.output}, the reasons in the warnings above): ` +
    `the platform failed, not the input; rerun the same command later\n`
  );
}

/**
 * `share` to `digits` decimals, except that a share that is not 0 never comes out as 0 (one
 * rejected row in 100,000 is 0.00001, not 0): it keeps its first two significant digits instead.
 */
export function roundShare(share: number, digits: number): number {
  const rounded = Number(share.toFixed(digits));
  return rounded === 0 && share > 0 ? Number(share.toPrecision(2)) : rounded;
}
