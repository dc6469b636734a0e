import type { CodeGroup, ReportDetails, ReportExample, ReportPage } from './model.js';

/**
 * Renders the run report as one self-contained HTML page: inline CSS and SVG only, no script, no
 * external resource (a Content-Security-Policy forbids any), readable on a phone and printable.
 * Every text of the data (keys included) is passed through `redact` first (no API key, no
 * password), then written by {@link esc} into an attribute or the title, or by {@link val} into
 * the page: no value can change the markup, the layout around it or what is redacted. Numbers
 * that come from the run's JSON summary carry `data-metric="<path in the summary>"` and
 * `data-value` (the exact number).
 */
export function renderReport(data: ReportPage, redact: (text: string) => string = (t) => t): string {
  const page = redactTexts(data, redact) as ReportPage;
  const s = page.summary;
  const d = page.details;
  const sections = [
    stopSection(s),
    totalsSection(s),
    statusSection(s, d),
    correctionsSection(d),
    reviewSection(s, d),
    failuresSection(d),
    costSection(s, d),
    conflictsSection(s, d),
    notesSection(d),
  ].filter((x) => x !== '');
  const outcome = str(s['outcome'] ?? s['state']);
  const title = `${page.tool} report: ${page.subject}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>${val(page.tool)} <span class="subject">${val(page.subject)}</span></h1>
<p class="meta">${page.run ? `run <code>${val(page.run)}</code> · ` : ''}${outcome ? `outcome <strong data-metric="${s['outcome'] !== undefined ? 'outcome' : 'state'}" data-value="${esc(outcome)}">${val(outcome)}</strong> · ` : ''}${typeof s['exitCode'] === 'number' ? `exit code ${metric(s, 'exitCode')} · ` : ''}generated ${val(page.generatedAt)}</p>
</header>
<main>
${sections.join('\n')}
</main>
</body>
</html>
`;
}

const CSS = `
:root{--fg:#1d2430;--muted:#5b6575;--line:#d9dee7;--bg:#fff;--card:#f5f7fa;--accent:#2f6fde;--ok:#2e8b57;--warn:#c98a00;--bad:#c0392b}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
header,main{max-width:1040px;margin:0 auto;padding:0 16px}
header{padding-top:20px}
h1{font-size:1.5rem;margin:0 0 4px}
h1 .subject{font-weight:400;color:var(--muted);word-break:break-all}
h2{font-size:1.15rem;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.stop{border-left:4px solid var(--bad);padding-left:12px}
.meta,.hint{color:var(--muted);margin:4px 0}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--card);padding:1px 4px;border-radius:3px;word-break:break-all}
pre{background:var(--card);padding:8px 10px;border-radius:4px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{background:var(--card);border-radius:6px;padding:10px 12px}
.card .n{font-size:1.4rem;font-weight:600;display:block}
.card .l{color:var(--muted);font-size:.85rem}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:24px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:.85rem}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.bar{width:40%;min-width:90px}
td.bar svg{display:block;width:100%;height:14px}
.ex{font-size:.9rem}
bdi{white-space:pre-wrap}
.ex del{color:var(--bad);text-decoration:line-through}
.ex ins{color:var(--ok);text-decoration:none}
.rate svg{display:block;width:100%;height:160px;background:var(--card);border-radius:4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;color:var(--muted);font-size:.85rem;margin-top:4px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
@media (max-width:700px){.grid2{grid-template-columns:1fr}body{font-size:14px}td.bar{min-width:60px}
table.stack thead{display:none}table.stack tr{display:grid;grid-template-columns:1fr auto 35%;border-bottom:1px solid var(--line)}table.stack td{border:0}table.stack td.ex{grid-column:1/-1;padding-top:0}}
@media print{body{font-size:11pt}header,main{max-width:none;padding:0}h2{break-after:avoid}section,table,tr{break-inside:avoid}.card{border:1px solid var(--line)}.scroll{overflow:visible}}
`;

const STATUS_COLOURS: Record<string, string> = {
  accepted: '#2e8b57',
  review: '#c98a00',
  invalid: '#c0392b',
  'invalid-input': '#8e44ad',
  'unsupported-country': '#7f8c8d',
  unavailable: '#34495e',
};
const CLASS_COLOURS: Record<string, string> = { A: '#2e8b57', B: '#4caf7a', C: '#8bc34a', D: '#e0a800', E: '#e67e22', F: '#c0392b' };

/** Summary numbers shown as cards, when the summary has them. */
const TOTALS: [path: string, label: string][] = [
  ['rows', 'rows'],
  ['records', 'records'],
  ['rejects', 'rejected rows'],
  ['written', 'rows written'],
  ['wouldWrite', 'rows that would change'],
  ['unchanged', 'rows unchanged'],
  ['conflicts', 'conflicts (left alone)'],
  ['apiCalls', 'API calls'],
  ['callsSavedByDedup', 'calls saved by dedup'],
  ['callsSavedByCache', 'calls saved by cache'],
  ['callsSavedByStore', 'calls saved by the result store'],
  ['storeHitRate', 'result store hit rate'],
  ['retries', 'retries'],
  ['failedShare', 'failed share'],
  ['durationMs', 'duration (ms)'],
  ['runs', 'runs (1 + resumes)'],
];

/** Why the run stopped early, when it did (the summary's `error`). */
function stopSection(s: Record<string, unknown>): string {
  const e = record(s['error']);
  if (!e) return '';
  const id = typeof e['requestId'] === 'string' ? ` (request id <code>${val(e['requestId'])}</code>)` : '';
  return `<section id="stopped" class="stop"><h2>The run stopped</h2><p><code data-metric="error.code" data-value="${esc(e['code'])}">${val(e['code'])}</code>: ${val(e['message'])}${id}</p></section>`;
}

function totalsSection(s: Record<string, unknown>): string {
  const cards = TOTALS.filter(([p]) => typeof s[p] === 'number').map(
    ([p, label]) => `<div class="card"><span class="n">${metric(s, p)}</span><span class="l">${esc(label)}</span></div>`,
  );
  return `<section id="totals"><h2>Totals</h2><div class="cards">${cards.join('')}</div></section>`;
}

function statusSection(s: Record<string, unknown>, d: ReportDetails): string {
  const byStatus = record(s['byStatus']);
  const summaryClasses = record(s['byClass']);
  const byClass = summaryClasses ?? d.byClass;
  const statusTable = byStatus
    ? barTable(
        'status',
        Object.entries(byStatus),
        (k) => colourOf(STATUS_COLOURS, k),
        (k) => metric(s, 'byStatus', k),
      )
    : '<p class="hint">no statuses</p>';
  const classTable = byClass
    ? barTable(
        'class',
        Object.entries(byClass),
        (k) => colourOf(CLASS_COLOURS, k),
        (k, v) => (summaryClasses ? metric(s, 'byClass', k) : detail(`byClass.${k}`, v)),
      )
    : '<p class="hint">no result classes recorded</p>';
  return `<section id="status"><h2>Results</h2><div class="grid2"><div><h3>By status</h3>${statusTable}</div><div><h3>By result class</h3>${classTable}<p class="hint">A–C: corrected values written · D–E: kept, waiting for review · F: invalid, kept and flagged</p></div></div></section>`;
}

function barTable(what: string, rows: [string, unknown][], colour: (k: string) => string, cell: (k: string, v: number) => string): string {
  const numbers = rows.map(([k, v]) => [k, typeof v === 'number' ? v : 0] as const);
  const max = largest(numbers.map(([, v]) => v));
  const body = numbers
    .map(([k, v]) => `<tr><td>${val(k)}</td><td class="num">${cell(k, v)}</td><td class="bar">${bar(v / max, colour(k), `${k}: ${fmt(v)}`)}</td></tr>`)
    .join('');
  return `<table><thead><tr><th>${esc(what)}</th><th class="num">count</th><th></th></tr></thead><tbody>${body}</tbody></table>`;
}

/** A bar of `share` (0–1; what is not a number in that range draws as 0 or 1). */
function bar(share: number, colour: string, label: string): string {
  const w = Number.isNaN(share) ? 0 : Math.max(0, Math.min(100, share * 100));
  return `<svg viewBox="0 0 100 14" preserveAspectRatio="none" role="img" aria-label="${esc(label)}"><rect x="0" y="1" width="100" height="12" fill="#eef1f5"/><rect x="0" y="1" width="${w.toFixed(2)}" height="12" fill="${colour}"/></svg>`;
}

function correctionsSection(d: ReportDetails): string {
  const c = d.corrections;
  if (!c) return '';
  if (c.fields.length === 0)
    return `<section id="corrections"><h2>Corrections</h2><p>No value was changed.</p>${c.note ? `<p class="hint">${val(c.note)}</p>` : ''}</section>`;
  const max = largest(c.fields.map((f) => f.changed));
  const rows = c.fields.map(
    (f) =>
      `<tr><td>${val(f.field)}</td><td class="num">${detail(`corrections.${f.field}`, f.changed)}</td><td class="bar">${bar(f.changed / max, '#2f6fde', `${f.field}: ${fmt(f.changed)}`)}</td><td class="ex">${examples(f.examples)}</td></tr>`,
  );
  return `<section id="corrections"><h2>Corrections per field</h2><p>${detail('corrections.rows', c.rows)} accepted records had at least one value changed.</p>${c.note ? `<p class="hint">${val(c.note)}</p>` : ''}<div class="scroll"><table class="stack"><thead><tr><th>field</th><th class="num">changed</th><th></th><th>first examples (before → after)</th></tr></thead><tbody>${rows.join('')}</tbody></table></div></section>`;
}

function examples(list: readonly ReportExample[]): string {
  return list
    .map((e) => {
      const change =
        e.before !== undefined || e.after !== undefined
          ? `<del>${e.before === null || e.before === undefined ? '(empty)' : val(e.before)}</del> → <ins>${e.after === null || e.after === undefined ? '(empty)' : val(e.after)}</ins>`
          : '';
      const text = e.text ? ` ${val(e.text)}` : '';
      const id = e.requestId ? ` <code>${val(e.requestId)}</code>` : '';
      return `<div><span class="hint">${val(e.where)}:</span> ${change}${text}${id}</div>`;
    })
    .join('');
}

function reviewSection(s: Record<string, unknown>, d: ReportDetails): string {
  const r = d.review;
  const count = record(s['byStatus'])?.['review'];
  if (!r && typeof count !== 'number') return '';
  const classes = r
    ? Object.entries(r.byClass)
        .map(([k, v]) => `class ${val(k)}: ${detail(`review.${k}`, v)}`)
        .join(' · ')
    : '';
  const n = typeof count === 'number' ? metric(s, 'byStatus', 'review') : fmt(r?.count ?? 0);
  return `<section id="review"><h2>Review queue</h2><p>${n} records wait for a decision${classes ? ` (${classes})` : ''}: their input is kept, the suggestion stored.</p>${r ? `<p>Export them to decide: <code>${val(r.command)}</code></p>${r.examples.length ? `<div class="ex">${examples(r.examples)}</div>` : ''}` : ''}</section>`;
}

function groupTable(groups: readonly CodeGroup[]): string {
  const rows = groups.map(
    (g) =>
      `<tr><td><code>${val(g.code)}</code></td><td class="num">${detail(`code.${g.code}`, g.count)}</td><td></td><td class="ex">${examples(g.examples)}${g.requestIds.length ? `<div class="hint">request ids: ${g.requestIds.map((id) => `<code>${val(id)}</code>`).join(' ')}</div>` : ''}</td></tr>`,
  );
  return `<div class="scroll"><table class="stack"><thead><tr><th>code</th><th class="num">records</th><th></th><th>first examples</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}

function failuresSection(d: ReportDetails): string {
  const failures = d.failures ?? [];
  const rejects = d.rejects ?? [];
  const parts = ['<section id="failures"><h2>Failures and rejects</h2>'];
  if (failures.length === 0 && rejects.length === 0) parts.push('<p>None: every record was read and answered.</p>');
  if (failures.length > 0)
    parts.push(`<h3>Records that failed (<code>unavailable</code>: rerun to retry; <code>invalid-input</code>: fix the record)</h3>${groupTable(failures)}`);
  if (rejects.length > 0) parts.push(`<h3>Rejected input (could not be read)</h3>${groupTable(rejects)}`);
  parts.push('</section>');
  return parts.join('');
}

function costSection(s: Record<string, unknown>, d: ReportDetails): string {
  const parts = ['<section id="cost"><h2>Cost</h2><p>'];
  const said: string[] = [];
  if (typeof s['apiCalls'] === 'number') said.push(`${metric(s, 'apiCalls')} calls made`);
  if (typeof s['callsSavedByDedup'] === 'number') said.push(`${metric(s, 'callsSavedByDedup')} saved by dedup`);
  if (typeof s['callsSavedByCache'] === 'number') said.push(`${metric(s, 'callsSavedByCache')} saved by this run's cache of answers`);
  if (typeof s['callsSavedByStore'] === 'number') said.push(`${metric(s, 'callsSavedByStore')} saved by the result store`);
  if (typeof s['storeHitRate'] === 'number') said.push(`store hit rate ${metric(s, 'storeHitRate')}`);
  if (typeof s['retries'] === 'number') said.push(`${metric(s, 'retries')} retries`);
  parts.push(said.join(' · ') || 'no call counts', '</p>');
  parts.push(rateChart(d.rate));
  parts.push('</section>');
  return parts.join('');
}

function rateChart(rate: ReportDetails['rate']): string {
  if (!rate || rate.counts.length === 0)
    return '<p class="hint">No calls-per-second record for this run (it is kept by the process that made the calls: pass --report to the run itself).</p>';
  const perSecond = rate.counts.map((c) => finiteOrZero(c / rate.bucketSeconds));
  const peak = Math.max(...perSecond);
  const limit = finiteOrZero(rate.limit ?? 0);
  const top = Math.max(peak, limit) * 1.1 || 1;
  const W = 600;
  const H = 160;
  const w = W / perSecond.length;
  const height = (v: number) => Math.max(0, Math.min(H, (v / top) * H));
  const bars = perSecond
    .map(
      (v, i) =>
        `<rect x="${(i * w).toFixed(2)}" y="${(H - height(v)).toFixed(2)}" width="${Math.max(w - 0.5, 0.5).toFixed(2)}" height="${height(v).toFixed(2)}" fill="#2f6fde"><title>${fmt(round(v))} calls/s</title></rect>`,
    )
    .join('');
  const limitLine = limit
    ? `<line x1="0" x2="${W}" y1="${(H - height(limit)).toFixed(2)}" y2="${(H - height(limit)).toFixed(2)}" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6 4" vector-effect="non-scaling-stroke"/>`
    : '';
  const total = rate.counts.reduce((a, b) => a + b, 0);
  const seconds = rate.counts.length * rate.bucketSeconds;
  const startDate = new Date(rate.startSecond * 1000);
  const start = Number.isNaN(startDate.getTime()) ? 'an unknown time' : startDate.toISOString().replace('.000Z', 'Z');
  return `<div class="rate"><h3>Calls per second${rate.bucketSeconds > 1 ? ` (averaged over ${rate.bucketSeconds}-second buckets)` : ''}</h3>
<svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="calls per second over the run">${bars}${limitLine}</svg>
<div class="legend"><span><span class="sw" style="background:#2f6fde"></span>calls/s (peak ${detail('rate.peak', round(peak))}, mean ${fmt(round(total / Math.max(1, seconds)))})</span>${rate.limit ? `<span><span class="sw" style="background:#c0392b"></span>client-side limit ${detail('rate.limit', rate.limit)}/s</span>` : '<span>no client-side limit</span>'}<span>from ${esc(start)} over ${fmt(seconds)} s; ${detail('rate.calls', total)} calls</span></div></div>`;
}

function conflictsSection(s: Record<string, unknown>, d: ReportDetails): string {
  const c = d.conflicts;
  if (!c && typeof s['conflicts'] !== 'number') return '';
  const n = typeof s['conflicts'] === 'number' ? metric(s, 'conflicts') : fmt(c?.count ?? 0);
  const keys = c && c.keys.length ? `<p class="hint">first keys: ${c.keys.map((k) => `<code>${val(k)}</code>`).join(' ')}</p>` : '';
  return `<section id="conflicts"><h2>Conflicts</h2><p>${n} rows changed in the table while the run read them; they were left as they are (nothing was overwritten).</p>${keys}${c ? `<p>See them with <code>${val(c.command)}</code></p>` : ''}</section>`;
}

function notesSection(d: ReportDetails): string {
  if (!d.notes || d.notes.length === 0) return '';
  return `<section id="notes"><h2>Notes</h2>${d.notes.map((n) => `<p>${val(n)}</p>`).join('')}</section>`;
}

/**
 * A summary number with its machine-readable marker: the value at `keys` (each one an own key,
 * so a status or class named `__proto__` or holding a dot is looked up as itself), marked with
 * its path (the keys joined by dots).
 */
function metric(s: Record<string, unknown>, ...keys: string[]): string {
  const value = keys.reduce<unknown>((o, k) => (o && typeof o === 'object' && Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined), s);
  if (typeof value !== 'number') return '–';
  const path = keys.join('.');
  const shown = path === 'failedShare' || path === 'storeHitRate' ? `${round(value * 100)} %` : fmt(value);
  return `<span data-metric="${esc(path)}" data-value="${value}">${shown}</span>`;
}

/** A number of the details (not of the summary) with its marker; anything else a connector put there is shown as text. */
function detail(path: string, value: number): string {
  return `<span data-detail="${esc(path)}" data-value="${esc(value)}">${typeof value === 'number' ? fmt(value) : esc(value)}</span>`;
}

/** The colour of a status or class; another key (`constructor` too) gets the accent colour. */
function colourOf(colours: Record<string, string>, key: string): string {
  return Object.hasOwn(colours, key) ? colours[key]! : '#2f6fde';
}

/** The scale of a bar chart: its largest number, at least 1 (what is not a finite number does not count). */
function largest(values: readonly number[]): number {
  return Math.max(1, ...values.map(finiteOrZero));
}

function finiteOrZero(v: number): number {
  return Number.isFinite(v) ? v : 0;
}

function record(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}

/** A number as the page shows it: grouped by thousands; one of 21 digits or more as JavaScript writes it (`1e+21`). */
function fmt(v: number): string {
  return Math.abs(v) >= 1e21 && Number.isFinite(v) ? String(v) : v.toLocaleString('en');
}

/**
 * Characters that are not text in an HTML page: C0 and C1 controls other than tab, line feed,
 * form feed and carriage return; noncharacters; lone surrogates (which UTF-8 cannot hold).
 */
const NOT_TEXT = /[\u0000-\u0008\u000B\u000E-\u001F\u007F-\u009F]|\p{Noncharacter_Code_Point}|\p{Cs}/gu;

/** What stands for a character that is not text: its control picture (␀, ␛, ␡), else U+FFFD. */
function visible(c: string): string {
  const code = c.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  return code === 0x7f ? '\u2421' : '\ufffd';
}

/**
 * Text for a quoted attribute or the title: HTML-escaped (`&`, `<`, `>`, `"`, `'`), and every
 * character that is not text shown by a visible stand-in (a NUL would vanish, a lone surrogate
 * could not be written), so the page is valid for any value.
 */
export function esc(value: unknown): string {
  return String(value)
    .replace(NOT_TEXT, visible)
    .replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A value of the data in the page's text: {@link esc}, in a `<bdi>` of its own, so that
 * right-to-left text or a bidi override (U+202E) in it is laid out inside the value and never
 * reorders what the page writes after it (the after of a before → after, a request id). Its
 * spaces are kept as they are (`white-space: pre-wrap`): a correction that only trimmed or joined
 * spaces must not look like no change.
 */
function val(value: unknown): string {
  return `<bdi>${esc(value)}</bdi>`;
}

/** `value` with every string in it, object keys included, passed through `redact`. */
function redactTexts(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v: unknown) => redactTexts(v, redact));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    Object.defineProperty(out, redact(k), { value: redactTexts(v, redact), enumerable: true, writable: true, configurable: true });
  return out;
}
