import { createEngine, DqError, exitCodeFor, ExitCode, isRunStop, type BudgetReport, type Engine, type EngineRecord, type RecordResult } from '@dq/core';
import { openStore } from '@dq/core/store';
import { BatchReader, batchesInFlight } from './batch-reader.js';
import { differingOptions, hashOptions, readCheckpoint, removeCheckpoint, writeCheckpoint, type Checkpoint } from './checkpoint.js';
import { planFile, type DryRunPlan } from './dry-run.js';
import { CsvError } from './errors.js';
import { inferFieldMap, recordMapper } from './mapping.js';
import { formatFromPath, runPaths, type ProcessFileOptions, type RunPaths } from './options.js';
import { claimRunFiles, statInput } from './run-files.js';
import { refuseResultKeys, resultColumns } from './sink/result-columns.js';
import { Sink } from './sink/sink.js';
import { openSource } from './source/index.js';
import { countResult, emptyTotals, failedShare, withEngineReport, type RunTotals } from './totals.js';
import { CsvReportDetails } from './report.js';
import type { ReportDetails } from '@dq/core/report';

/** What a run did; the CLI prints it as a table and one JSON line. */
export interface RunSummary {
  /** done: the whole file is written; stopped: the checkpoint holds the progress for --resume. */
  readonly outcome: 'done' | 'stopped' | 'dry-run';
  readonly exitCode: ExitCode;
  readonly paths: RunPaths;
  readonly totals: RunTotals;
  /** Rejected plus unavailable over all input records. */
  readonly failedShare: number;
  /** True when this run continued from a checkpoint. */
  readonly resumed: boolean;
  /** Why the run stopped early (code, message, request id). */
  readonly error?: { readonly code: string; readonly message: string; readonly requestId?: string };
  /** Dry run only: what a run would cost. */
  readonly plan?: DryRunPlan;
  /** With `report`: what the run report shows beside the summary's counts. */
  readonly details?: ReportDetails;
  /** The rate budget this run used (shared or local) and its billable calls against --max-calls. */
  readonly budget?: BudgetReport;
}

/**
 * Cleans one file: streams it, sends mapped records through the @dq/core engine in batches,
 * writes every row with result columns appended (rejects aside), and checkpoints after each
 * durable batch so a killed run continues with `resume`. Never throws for platform errors: they
 * end up in the summary's `error` and `exitCode`; usage problems throw a {@link CsvError}.
 */
export async function processFile(options: ProcessFileOptions): Promise<RunSummary> {
  if (options.dryRun) return runFile(options);
  const claim = await claimRunFiles(runPaths(options));
  try {
    return await runFile(options);
  } finally {
    await claim.release();
  }
}

async function runFile(options: ProcessFileOptions): Promise<RunSummary> {
  const started = Date.now();
  const paths = runPaths(options);
  const format = options.format ?? formatFromPath(paths.input);
  const mode = options.mode ?? 'address';
  const delimiter = options.delimiter ?? ',';
  const batchSize = options.batchSize ?? 500;
  const inputStat = await statInput(paths.input);
  if (options.dryRun) {
    const plan = await planFile({ ...options, format, mode, delimiter }, paths);
    return { outcome: 'dry-run', exitCode: ExitCode.OK, paths, totals: plan.totals, failedShare: failedShare(plan.totals), resumed: false, plan };
  }

  // Options that shape the output: a resume must use the same ones.
  const identity = {
    input: paths.input,
    inputSize: inputStat.size,
    inputMtimeMs: inputStat.mtimeMs,
    output: paths.output,
    rejects: paths.rejects,
    format,
    encoding: options.encoding ?? 'utf8',
    delimiter,
    mode,
    map: options.map ?? null,
    country: options.country ?? null,
    include: options.include ?? [],
    ...(options.spreadsheetSafe ? { spreadsheetSafe: true } : {}),
  };
  const optionsHash = hashOptions(identity);
  const checkpoint = await readCheckpoint(paths.checkpoint);
  if (checkpoint && !options.resume) {
    throw new CsvError(
      'checkpoint-exists',
      `an interrupted run left ${paths.checkpoint}: rerun with --resume to continue it, or delete that file to start over`,
    );
  }
  if (checkpoint && checkpoint.optionsHash !== optionsHash) {
    const differing = differingOptions(checkpoint.options, identity);
    // The same options over a changed input: its offsets no longer point at the same records.
    if (differing.every((name) => name === 'inputSize' || name === 'inputMtimeMs')) {
      const was = checkpoint.options as { inputSize?: number; inputMtimeMs?: number };
      throw new CsvError(
        'resume-mismatch',
        `the input ${paths.input} was changed since the interrupted run (${was.inputSize} bytes, modified ${new Date(was.inputMtimeMs ?? 0).toISOString()}; now ${inputStat.size} bytes, modified ${inputStat.mtime.toISOString()}): resuming would mix its two versions; delete ${paths.checkpoint} and rerun without --resume to clean it from the start (answers already paid for are not bought again unless the run had --store off)`,
      );
    }
    const differ = differing.join(', ');
    throw new CsvError(
      'resume-mismatch',
      `cannot resume: ${differ} differ from the interrupted run's; rerun with the same options, or delete ${paths.checkpoint} to start over`,
    );
  }

  const source = await openSource({ path: paths.input, format, encoding: options.encoding, delimiter, start: checkpoint?.position });
  let sink: Sink | undefined;
  let engine: Engine | undefined;
  let reader: BatchReader<RecordResult> | undefined;
  const base = checkpoint?.totals ?? emptyTotals();
  const counted: RunTotals = structuredClone(base);
  const totalsNow = () => withEngineReport(base, counted, engine?.report(), Date.now() - started);
  let position = checkpoint?.position ?? { records: 0, offset: 0, line: 1 };
  let report: CsvReportDetails | undefined;
  const details = () => report?.details(paths.output, engine?.report(), checkpoint !== undefined);
  try {
    const map = options.map ?? inferFieldMap(mode, source.header);
    const toRecord = recordMapper(map, source.header);
    const columns = resultColumns(mode, options.include);
    report = options.report ? new CsvReportDetails(mode, columns) : undefined;
    const clash = columns.names.find((name) => source.header?.includes(name));
    if (clash) throw new CsvError('bad-mapping', `the input already has a column ${clash} (is it an output of dq-csv?); rename it or clean the original file`);
    if (!options.baseUrl)
      throw new CsvError('usage', 'a platform URL is needed: pass --base-url or set DQ_BASE_URL (npm run demo starts a local sandbox by itself)');
    if (!options.apiKey) throw new CsvError('usage', 'an API key is needed: set DQ_API_KEY (or pass --api-key)');

    // The result store keeps every answer a stopped or killed run paid for (even one stopped
    // before its first checkpoint), so a resume, and any later run over the same inputs, finds
    // them instead of buying them again (its keys hold the request and the settings that shape the answer).
    const { store, maxAgeMs, ...engineSettings } = options.engine ?? {};
    const resultStore = await openStore(store, { maxAgeMs });
    engine = createEngine({
      mode,
      baseUrl: options.baseUrl,
      realtimeUrl: options.realtimeUrl,
      apiKey: options.apiKey,
      defaultCountry: options.country,
      include: options.include,
      resultStore,
      logger: options.logger,
      ...engineSettings,
    });
    sink = await Sink.open({
      outputPath: paths.output,
      rejectsPath: paths.rejects,
      format,
      delimiter,
      header: source.header,
      columns,
      spreadsheetSafe: options.spreadsheetSafe,
      resume: checkpoint?.sink,
      checkpointPath: paths.checkpoint,
    });
    // The output exists from here on: a checkpoint marks it unfinished at once, so a run stopped or
    // killed before its first batch leaves an output that `--resume` continues and review refuses.
    if (!checkpoint) await writeCheckpoint(paths.checkpoint, checkpointOf(optionsHash, identity, position, sink.state, totalsNow()));

    // A window of batches with the engine: while the oldest one's last answers arrive and it is
    // written and checkpointed, the later ones keep the engine's calls (and the rate limit) busy.
    // Calls paid for by any of them are in the result store, so a kill costs no second payment.
    reader = new BatchReader<RecordResult>(source, batchSize, batchesInFlight(batchSize), (read) => {
      const items = read.map((item) => refuseResultKeys(item, columns.names));
      const records: EngineRecord[] = [];
      for (const item of items) if (item.kind === 'row') records.push(toRecord(item));
      const results = records.length > 0 ? engine!.process(records, { signal: options.signal }) : Promise.resolve([]);
      results.catch(() => undefined); // awaited in order below; not an unhandled rejection meanwhile
      return { items, results };
    });
    for (let current = await reader.next(); current; current = await reader.next()) {
      const { items } = current;
      // The engine rejects (the run stops, the checkpoint stays at the last batch written) when the
      // platform cannot be reached; an unavailable result is a record that failed on its own.
      const results = await current.results;
      // Counts as of the last batch written: a stop while writing this one reports what is written.
      const written = structuredClone(counted);
      let r = 0;
      for (const item of items) {
        if (item.kind === 'row') {
          const result = results[r++]!;
          sink.row(item, result);
          countResult(counted, result);
          report?.row(item, toRecord(item), result);
        } else {
          sink.reject(item);
          report?.reject(item);
          counted.rejects += 1;
        }
      }
      const next = items[items.length - 1]!.position;
      try {
        const sinkState = await sink.commit();
        await writeCheckpoint(paths.checkpoint, checkpointOf(optionsHash, identity, next, sinkState, totalsNow()));
      } catch (err) {
        Object.assign(counted, written);
        throw err;
      }
      position = next; // what a stop reports as checkpointed
      options.progress?.update(totalsNow(), position.offset, source.totalBytes);
    }
    await sink.finish();
    const totals = totalsNow();
    const done = details();
    await engine.close();
    await removeCheckpoint(paths.checkpoint);
    const budget = engine.report().budget;
    return {
      outcome: 'done',
      exitCode: exitCodeFor({ report: { records: totals.rows, byStatus: totals.byStatus }, rejects: totals.rejects, maxFailed: options.maxFailed ?? 0 }),
      paths,
      totals,
      failedShare: failedShare(totals),
      resumed: checkpoint !== undefined,
      ...(done ? { details: done } : {}),
      ...(budget ? { budget } : {}),
    };
  } catch (err) {
    // Refused before the run wrote anything (mapping, options, a checkpoint of other options): a
    // usage error, no summary. Once the output is open, or when a write failed (output-io, the
    // header's included), the run stops with its summary and report.
    if (err instanceof CsvError && !sink && err.code !== 'output-io') throw err;
    const totals = totalsNow();
    return {
      outcome: 'stopped',
      exitCode: options.signal?.aborted && !(err instanceof CsvError) ? ExitCode.TEMPFAIL : exitCodeFor(err),
      paths,
      totals,
      failedShare: failedShare(totals),
      resumed: checkpoint !== undefined,
      error: describeStop(err, position.records, options.signal?.aborted === true),
      ...(report ? { details: details() } : {}),
      ...(engine?.report().budget ? { budget: engine.report().budget } : {}),
    };
  } finally {
    await reader?.stop();
    await sink?.close();
    await engine?.close().catch(() => undefined);
    await source.close();
  }
}

function checkpointOf(
  optionsHash: string,
  options: Record<string, unknown>,
  position: Checkpoint['position'],
  sink: Checkpoint['sink'],
  totals: RunTotals,
): Checkpoint {
  return { version: 1, optionsHash, options, position, sink, totals, writtenAt: new Date().toISOString() };
}

function describeStop(err: unknown, records: number, interrupted: boolean): RunSummary['error'] {
  const where = records === 0 ? 'no input record is written yet' : `input records 1-${records} are written and checkpointed`;
  // SIGINT / SIGTERM (main.ts aborts the run with the signal's name): a stop asked for, not a failure.
  if (interrupted && !(err instanceof CsvError)) {
    return { code: 'interrupted', message: `${(err as Error)?.message ?? String(err)}; ${where}; rerun with --resume` };
  }
  if (err instanceof CsvError) return { code: err.code, message: `${err.message}; ${where}` };
  if (err instanceof DqError) {
    const action = !isRunStop(err)
      ? 'rerun with --resume'
      : exitCodeFor(err) === ExitCode.MAX_CALLS
        ? 'rerun with --resume to continue (answers already paid for are not bought again), with a new --max-calls or none'
        : err.code === 'proxy-refused'
          ? 'fix the proxy setting and rerun with --resume'
          : exitCodeFor(err) === ExitCode.STOP
            ? 'the platform refused the account or key; fix it (key, plan, quota) and rerun with --resume'
            : 'rerun with --resume later, once the platform answers again (answers already paid for are not bought again)';
    return {
      code: err.code,
      message: `${err.message}${err.requestId ? ` (request id ${err.requestId})` : ''}; ${where}; ${action}`,
      ...(err.requestId ? { requestId: err.requestId } : {}),
    };
  }
  const e = err as Error;
  return { code: (e as { code?: string }).code ?? 'unexpected', message: `${e?.message ?? String(err)}; ${where}; rerun with --resume` };
}
