import type { RunTotals } from './totals.js';

/** Receives progress after each committed batch. */
export interface ProgressReporter {
  update(totals: RunTotals, bytesRead: number, totalBytes: number): void;
  /** Clears a bar before the summary is printed. */
  done(): void;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Where to write; default process.stderr. */
  readonly stream?: NodeJS.WriteStream;
  /** Draw a bar (default: when the stream is a TTY) instead of JSON lines. */
  readonly tty?: boolean;
  /** Least time between two JSON lines, in milliseconds; default 5 000. */
  readonly intervalMs?: number;
}

/**
 * A bar redrawn in place on a TTY; otherwise one JSON line
 * (`{"event":"progress","rows":…,"percent":…}`) at most every `intervalMs`, for logs of
 * schedulers such as Airflow.
 */
export function createProgress(options: ProgressOptions = {}): ProgressReporter {
  const stream = options.stream ?? process.stderr;
  const tty = options.tty ?? Boolean(stream.isTTY);
  const intervalMs = options.intervalMs ?? 5_000;
  const started = performance.now(); // monotonic: rates unbent by a step of the wall clock
  let last = -Infinity; // the first update is shown at once
  let drawn = false;

  return {
    update(totals, bytesRead, totalBytes) {
      const now = performance.now();
      const percent = totalBytes > 0 ? Math.min(100, (100 * bytesRead) / totalBytes) : 100;
      const elapsedS = (now - started) / 1000;
      const records = totals.rows + totals.rejects;
      if (tty) {
        if (now - last < 100 && percent < 100) return;
        last = now;
        const width = 30;
        const filled = Math.round((percent / 100) * width);
        const rate = elapsedS > 0 ? Math.round(totals.rows / elapsedS) : 0;
        const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
        stream.write(
          `\r${bar} ${percent.toFixed(1).padStart(5)}%  ${records.toLocaleString('en')} rows  ${rate.toLocaleString('en')} rows/s  ${totals.apiCalls.toLocaleString('en')} calls `,
        );
        drawn = true;
      } else {
        if (now - last < intervalMs) return;
        last = now;
        stream.write(
          JSON.stringify({
            event: 'progress',
            rows: totals.rows,
            rejects: totals.rejects,
            percent: Number(percent.toFixed(1)),
            apiCalls: totals.apiCalls,
            elapsedMs: Math.round(now - started),
          }) + '\n',
        );
      }
    },
    done() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}

/** A reporter that says nothing (library use, tests). */
export const silentProgress: ProgressReporter = { update() {}, done() {} };
