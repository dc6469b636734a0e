import { describe, expect, it } from 'vitest';
import { createProgress } from '../src/progress.js';
import { emptyTotals } from '../src/totals.js';

/** A stream that keeps what is written to it. */
function capture(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = { write: (chunk: string) => ((text += chunk), true), isTTY: false } as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

describe('progress lines for a scheduler log', () => {
  it('shows the first update at once, then at most one line per interval, with whole milliseconds elapsed', async () => {
    const out = capture();
    const progress = createProgress({ stream: out.stream, tty: false, intervalMs: 200 });
    const totals = { ...emptyTotals(), rows: 10 };
    progress.update(totals, 50, 100);
    progress.update(totals, 60, 100);
    expect(out.lines()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 250));
    progress.update({ ...totals, rows: 20 }, 100, 100);
    const lines = out.lines().map((l) => JSON.parse(l) as { event: string; rows: number; percent: number; elapsedMs: number });
    expect(lines.map((l) => [l.event, l.rows, l.percent])).toEqual([
      ['progress', 10, 50],
      ['progress', 20, 100],
    ]);
    for (const l of lines) expect(Number.isInteger(l.elapsedMs)).toBe(true);
    expect(lines[1]!.elapsedMs).toBeGreaterThanOrEqual(200);
  });
});
