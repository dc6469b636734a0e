import { stat } from 'node:fs/promises';
import {
  answeringPlatform,
  createEngine,
  DqError,
  exitCodeFor,
  ExitCode,
  stopAdvice,
  type BudgetReport,
  type Engine,
  type EngineRecord,
  type RecordResult,
} from '@dq/core';
import { embeddedStoreFiles, openStore, reusesAnswers } from '@dq/core/store';
import { BatchReader, batchesInFlight } from './batch-reader.js';
import { differingOptions, hashOptions, readCheckpoint, removeCheckpoint, writeCheckpoint, type Checkpoint } from './checkpoint.js';
import { planFile, type DryRunPlan } from './dry-run.js';
import { CsvError } from './errors.js';
import { inferFieldMap, recordMapper } from './mapping.js';
import { InputSampler, type InputFingerprint } from './input-fingerprint.js';
import { formatFromPath, type ProcessFileOptions, type RunPaths } from './options.js';
import { checkpointOfAnotherName, claimRunFiles, refuseChangedWhileRead, resolveRunPaths, statInput, writtenPath, type RunClaim } from './run-files.js';
import { refuseResultKeys, resultColumns } from './sink/result-columns.js';
import { Sink } from './sink/sink.js';
import { writeProblem } from './sink/write-error.js';
import { asciiBefore, openSource } from './source/index.js';
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
  /**
   * A stopped run: the checkpoint it left for `--resume`. Absent when there is none on disk (the
   * run stopped before it wrote its first one, or its folder was removed): a rerun starts from
   * the first row.
   */
  readonly checkpoint?: string;
}

/**
 * Cleans one file: streams it, sends mapped records through the @dq/core engine in batches,
 * writes every row with result columns appended (rejects aside), and checkpoints after each
 * durable batch so a killed run continues with `resume`. Never throws for platform errors: they
 * end up in the summary's `error` and `exitCode`; usage problems throw a {@link CsvError}.
 */
export async function processFile(options: ProcessFileOptions): Promise<RunSummary> {
  // Paths of the files written, whatever way --output names them (a symlink, a symlinked folder).
  const paths = await resolveRunPaths(options);
  if (options.dryRun) return runFile(options, paths);
  const claim = await claimRunFiles(paths, embeddedStoreFiles(options.engine?.store));
  try {
    return await runFile(options, paths, claim);
  } finally {
    // A lock left behind (its folder made read-only or removed during the run) does not change
    // what the run did: the next run takes it over, as its process is gone (README "the lock").
    await claim
      .release()
      .catch((err: unknown) =>
        options.logger?.warn(`cannot remove this run's lock (${writeProblem(err)}); the next run takes it over, as this process is gone`),
      );
  }
}

async function runFile(options: ProcessFileOptions, paths: RunPaths, claim?: RunClaim): Promise<RunSummary> {
  // Durations on the monotonic clock: a step of the wall clock during the run does not bend them.
  const started = performance.now();
  const format = options.format ?? formatFromPath(paths.input);
  const mode = options.mode ?? 'address';
  const delimiter = options.delimiter ?? ',';
  const batchSize = options.batchSize ?? 500;
  const inputStat = await statInput(paths.input);
  if (options.dryRun) {
    const plan = await planFile({ ...options, format, mode, delimiter }, paths);
    if (plan.interrupted !== undefined) {
      const message = `${messageOf(plan.interrupted)}: the dry run stopped after ${plan.totals.rows + plan.totals.rejects} input records; it wrote and paid nothing: run it again`;
      return {
        outcome: 'stopped',
        exitCode: ExitCode.TEMPFAIL,
        paths,
        totals: plan.totals,
        failedShare: failedShare(plan.totals),
        resumed: false,
        plan,
        error: { code: 'interrupted', message },
      };
    }
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
    // The platform that answers: a resume against another one would mix two platforms' answers
    // (the sandbox's and the platform's, say) in one output.
    platform: answeringPlatform(mode, options.baseUrl, options.realtimeUrl) ?? null,
  };
  const optionsHash = hashOptions(identity);
  const checkpoint = await readCheckpoint(paths.checkpoint);
  if (!checkpoint) await refuseCheckpointOfAnotherName(paths, options.resume === true);
  if (checkpoint && !options.resume) {
    throw new CsvError(
      'checkpoint-exists',
      `an interrupted run left ${paths.checkpoint}: rerun with --resume to continue it, or delete that file to start over`,
    );
  }
  const differing = checkpoint && checkpoint.optionsHash !== optionsHash ? await differingFromCheckpoint(checkpoint.options, identity) : [];
  // Another --encoding alone reads the same records when the input is plain ASCII up to the
  // checkpoint (a run stopped where UTF-8 first shows in a file read as Latin-1, README
  // "Encodings"): allowed once that part of the input is read below and found so.
  const encodingOnly = differing.length === 1 && differing[0] === 'encoding';
  const flag = (name: string) => (name === 'platform' ? (mode === 'address' ? '--base-url' : '--realtime-url') : (OPTION_FLAG[name] ?? name));
  const mismatch = () => {
    const differ = differing.map(flag).join(', ');
    return new CsvError(
      'resume-mismatch',
      `cannot resume: ${differ} ${differing.length === 1 ? 'is' : 'are'} not as in the interrupted run; rerun with its options, or delete ${paths.checkpoint} to start over`,
    );
  };
  if (checkpoint && differing.length > 0 && !encodingOnly) {
    // The same options over a changed input: its offsets no longer point at the same records.
    if (differing.every((name) => name === 'inputSize' || name === 'inputMtimeMs')) {
      const was = checkpoint.options as { inputSize?: number; inputMtimeMs?: number };
      throw new CsvError(
        'resume-mismatch',
        `the input ${paths.input} was changed since the interrupted run (${was.inputSize} bytes, modified ${new Date(was.inputMtimeMs ?? 0).toISOString()}; now ${inputStat.size} bytes, modified ${inputStat.mtime.toISOString()}): resuming would mix its two versions; delete ${paths.checkpoint} and rerun without --resume to clean it from the start (answers already paid for are not bought again unless the run had --store off)`,
      );
    }
    throw mismatch();
  }

  // Samples of the input's content for the checkpoints, read from the file this run reads.
  const sampler = await InputSampler.open(paths.input, inputStat.size, inputStat.ino);
  let source: Awaited<ReturnType<typeof openSource>>;
  try {
    if (checkpoint?.input) await refuseChangedContent(sampler, checkpoint.input, paths, inputStat);
    if (checkpoint && encodingOnly && !(await asciiBefore(paths.input, checkpoint.position.offset, inputStat.size, sampler.file))) throw mismatch();
    source = await openSource({ path: paths.input, file: sampler.file, format, encoding: options.encoding, delimiter, start: checkpoint?.position });
  } catch (err) {
    await sampler.close();
    throw err;
  }
  let sink: Sink | undefined;
  let engine: Engine | undefined;
  let reader: BatchReader<RecordResult> | undefined;
  const base = checkpoint?.totals ?? emptyTotals();
  const counted: RunTotals = structuredClone(base);
  const totalsNow = () => withEngineReport(base, counted, engine?.report(), Math.round(performance.now() - started));
  let position = checkpoint?.position ?? { records: 0, offset: 0, line: 1 };
  /** The position and output state the checkpoint on disk holds: a stop writes it again with the run's final counts. */
  let checkpointed: { position: typeof position; sink: Checkpoint['sink'] } | undefined = checkpoint ? { position, sink: checkpoint.sink } : undefined;
  let report: CsvReportDetails | undefined;
  const details = () => report?.details(paths.output, engine?.report(), checkpoint !== undefined);
  try {
    const map = options.map ?? inferFieldMap(mode, source.header, options.onHint ?? ((text) => options.logger?.warn(text)));
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
      // Files this run created: locked by device and inode too before anything is written to them.
      ...(claim ? { opened: () => claim.lockNewFiles() } : {}),
    });
    // The output exists from here on: a checkpoint marks it unfinished at once, so a run stopped or
    // killed before its first batch leaves an output that `--resume` continues and review refuses.
    if (!checkpoint) {
      const state = sink.state;
      await writeCheckpoint(paths.checkpoint, checkpointOf(optionsHash, identity, position, state, totalsNow(), await sampler.at(position.offset)));
      checkpointed = { position, sink: state };
    }

    // A window of batches with the engine: while the oldest one's last answers arrive and it is
    // written and checkpointed, the later ones keep the engine's calls (and the rate limit) busy.
    // Calls paid for by any of them are in the result store, so a kill costs no second payment.
    reader = new BatchReader<RecordResult>(source, batchSize, batchesInFlight(batchSize), (read) => {
      const items = read.map((item) => refuseResultKeys(item, columns.names));
      const records: EngineRecord[] = [];
      for (const item of items) if (item.kind === 'row') records.push(toRecord(item));
      const results = records.length > 0 ? engine!.process(records, { signal: options.signal, drain: options.stop }) : Promise.resolve([]);
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
        await writeCheckpoint(paths.checkpoint, checkpointOf(optionsHash, identity, next, sinkState, totalsNow(), await sampler.at(next.offset))).catch(
          async (err: unknown) => {
            // A folder removed under the run takes the checkpoint's with the files: said as the
            // files' change (output-changed, exit 2) whichever write came first, not as a failed write.
            await sink?.verify();
            throw err;
          },
        );
        checkpointed = { position: next, sink: sinkState };
      } catch (err) {
        Object.assign(counted, written);
        throw err;
      }
      position = next; // what a stop reports as checkpointed
      options.progress?.update(totalsNow(), position.offset, source.totalBytes);
    }
    await refuseChangedWhileRead(
      paths.input,
      inputStat,
      await sampler.file.stat(),
      paths.checkpoint,
      reusesAnswers(options.engine?.store, options.engine?.maxAgeMs),
    );
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
    // The calls still in flight end first: their answers reach the store and their count the
    // summary (which says what the account paid), and the checkpoint is written again with these
    // counts at the same position, so the resumed run's totals count every call of the file.
    await reader?.stop();
    await engine?.close().catch(() => undefined);
    const totals = totalsNow();
    if (checkpointed) {
      const { position: at, sink: state } = checkpointed;
      await writeCheckpoint(paths.checkpoint, checkpointOf(optionsHash, identity, at, state, totals, await sampler.at(at.offset))).catch(() => undefined);
    }
    // What the stop names is what is on disk: a run stopped before its first checkpoint (a store
    // or setting refused) has none to resume from or delete.
    const left = checkpointed !== undefined && (await fileExists(paths.checkpoint));
    return {
      outcome: 'stopped',
      exitCode: interruptedFirst(err, askedStop(options)) ? ExitCode.TEMPFAIL : exitCodeFor(err),
      paths,
      totals,
      failedShare: failedShare(totals),
      resumed: checkpoint !== undefined,
      error: describeStop(
        err,
        position.records,
        interruptedFirst(err, askedStop(options)) ? askedStop(options)!.reason : undefined,
        reusesAnswers(options.engine?.store, options.engine?.maxAgeMs),
        left,
      ),
      ...(report ? { details: details() } : {}),
      ...(engine?.report().budget ? { budget: engine.report().budget } : {}),
      ...(left ? { checkpoint: paths.checkpoint } : {}),
    };
  } finally {
    await reader?.stop();
    await sink?.close();
    await engine?.close().catch(() => undefined);
    await source.close();
    await sampler.close();
  }
}

function checkpointOf(
  optionsHash: string,
  options: Record<string, unknown>,
  position: Checkpoint['position'],
  sink: Checkpoint['sink'],
  totals: RunTotals,
  input: InputFingerprint,
): Checkpoint {
  return { version: 1, optionsHash, options, position, sink, totals, input, writtenAt: new Date().toISOString() };
}

/**
 * The options that differ between a checkpoint and this run. The output and the rejects file are
 * compared by the file they lead to: a checkpoint names them as its run's paths led to them (an
 * older dq-csv: as given, e.g. a symlink).
 */
/** The flag (or file) behind each option a resume must repeat, as a user names it. */
const OPTION_FLAG: Readonly<Record<string, string>> = {
  input: '--input',
  inputSize: 'the input file',
  inputMtimeMs: 'the input file',
  output: '--output',
  rejects: '--rejects',
  format: '--format',
  encoding: '--encoding',
  delimiter: '--delimiter',
  mode: '--mode',
  map: '--map',
  country: '--country',
  include: '--include',
  spreadsheetSafe: '--spreadsheet-safe',
};

async function differingFromCheckpoint(checkpointed: Readonly<Record<string, unknown>>, now: Readonly<Record<string, unknown>>): Promise<string[]> {
  const differing: string[] = [];
  for (const name of differingOptions(checkpointed, now)) {
    const then = checkpointed[name];
    // A checkpoint written before the platform was part of a run's options does not name it.
    if (name === 'platform' && !('platform' in checkpointed)) continue;
    if ((name === 'output' || name === 'rejects') && typeof then === 'string' && (await writtenPath(then)) === now[name]) continue;
    differing.push(name);
  }
  return differing;
}

/**
 * No checkpoint next to the output: refuses when an interrupted run left one next to another name
 * of the same file (a hard link in the same folder), rather than starting over the output that run
 * is not finished with.
 */
async function refuseCheckpointOfAnotherName(paths: RunPaths, resume: boolean): Promise<void> {
  const other = await checkpointOfAnotherName(paths);
  if (!other) return;
  const what = `the output ${paths.output} is also named ${other.name} (a hard link: the same file), and an interrupted run that wrote it under that name left ${other.checkpoint}`;
  const todo = `rerun with --output ${other.name} --resume to continue it (a run finds its checkpoint next to the name it wrote), or delete ${other.checkpoint} to start over`;
  if (resume) throw new CsvError('resume-mismatch', `cannot resume: ${what}: ${todo}`);
  throw new CsvError('checkpoint-exists', `${what}: ${todo}`);
}

/**
 * Refuses a resume whose input has the size and modification time of the checkpointed run's but
 * other content where the checkpoint sampled it (a file copied over it with `cp -p`, `touch -r`
 * or `rsync -t`): the output would mix the two files.
 */
async function refuseChangedContent(sampler: InputSampler, stored: InputFingerprint, paths: RunPaths, inputStat: { size: number; mtime: Date }): Promise<void> {
  const differ = await sampler.differences(stored);
  if (differ.length === 0) return;
  throw new CsvError(
    'resume-mismatch',
    `the input ${paths.input} was changed since the interrupted run, though its size and modification time are as they were (${inputStat.size} bytes, modified ${inputStat.mtime.toISOString()}: copied over with cp -p, touch -r or rsync -t?): ${differ.join(', ')} differ from the interrupted run's; resuming would mix its two versions; put back the input the run started with and rerun with --resume, or delete ${paths.checkpoint} and rerun without --resume to clean it from the start (answers already paid for are not bought again unless the run had --store off)`,
  );
}

/**
 * How a stopped dq-csv run continues, for core's stopAdvice; `reuses`: whether its store keeps the
 * answers paid for; `resumable`: whether it left a checkpoint (without one a rerun starts from the
 * first row, `--resume` or not).
 */
const resumeWords = (reuses: boolean, resumable: boolean) => ({
  resume: resumable ? 'rerun with --resume' : 'rerun',
  ...(reuses ? { kept: 'answers already paid for are not bought again' } : {}),
});

const fileExists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** The signal of the stop asked for (main.ts: a stop signal), if one was: the drain (`stop`) or the cut (`signal`). */
const askedStop = (o: ProcessFileOptions): AbortSignal | undefined => (o.stop?.aborted ? o.stop : o.signal?.aborted ? o.signal : undefined);

/**
 * Whether a stopped run counts as interrupted (SIGINT/SIGTERM: exit 75, `interrupted`): its signal
 * fired, unless what ended it meanwhile needs a person or a new cap (the account, key, plan or
 * quota refused, exit 3; the spending cap reached, exit 5), which a rerun alone would meet again.
 */
function interruptedFirst(err: unknown, signal: AbortSignal | undefined): boolean {
  if (!signal?.aborted || err instanceof CsvError) return false;
  const code = exitCodeFor(err);
  return code !== ExitCode.STOP && code !== ExitCode.MAX_CALLS;
}

/**
 * `interruption`: the reason the run's signal was aborted with (main.ts: `interrupted by SIGTERM`),
 * if it was; `resumable`: whether the run left a checkpoint.
 */
function describeStop(err: unknown, records: number, interruption: unknown, reuses: boolean, resumable: boolean): RunSummary['error'] {
  const RESUME = resumeWords(reuses, resumable);
  const where =
    records === 0
      ? 'no input record is written yet'
      : resumable
        ? `input records 1-${records} are written and checkpointed`
        : `input records 1-${records} were written, but their checkpoint is gone`;
  // SIGINT / SIGTERM (main.ts aborts the run with the signal's name): a stop asked for, not a
  // failure. The batch in flight may still end in a failure of its own while the run stops (an
  // outage found by its retries): the message says first what the code says, then that failure.
  if (interruption !== undefined && !(err instanceof CsvError)) {
    const asked = messageOf(interruption);
    const ended = messageOf(err);
    return { code: 'interrupted', message: `${ended.includes(asked) ? ended : `${asked}; meanwhile ${ended}`}; ${where}; ${RESUME.resume}` };
  }
  if (err instanceof CsvError) return { code: err.code, message: `${err.message}; ${where}` };
  const { advice } = stopAdvice(err, RESUME);
  if (err instanceof DqError) {
    return {
      code: err.code,
      message: `${err.message}${err.requestId ? ` (request id ${err.requestId})` : ''}; ${where}; ${advice}`,
      ...(err.requestId ? { requestId: err.requestId } : {}),
    };
  }
  const e = err as Error;
  return { code: (e as { code?: string }).code ?? 'unexpected', message: `${e?.message ?? String(err)}; ${where}; ${advice}` };
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
