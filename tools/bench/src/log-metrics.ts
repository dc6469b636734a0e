/**
 * Logger and metrics libraries against the hand-written code they replaced, in one process,
 * alternating order run by run; medians and spread.
 *
 * - Logger: core's pino-based `createLogger` against the former hand-written one
 *   (`reference/hand-logger.ts`), both writing every line with `fs.writeSync` to /dev/null. A line is
 *   a message and six fields, one of them nested, with a registered API key in every tenth message
 *   (both redact it). Figures: lines/s and CPU µs per line (user + system).
 * - Metrics, hot path: dq-kafka's `Metrics.inc` (a number in a Map, read by prom-client at scrape
 *   time) against calling prom-client's `Counter.inc` per message; ns per call.
 * - Metrics, scrape: `Metrics.render()` (prom-client registry, default process metrics included)
 *   against the former hand-written exposition (`reference/hand-metrics.ts`), with 12 partitions'
 *   lag, 5 DLQ reasons, 6 statuses and 6 classes; µs per scrape.
 *
 * Run: `node tools/bench/dist/log-metrics.js [lines=100000] [runs=5]`
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Counter, Registry } from 'prom-client';
import { createLogger } from '@dq/core';
import { METRIC, Metrics } from '@dq/kafka-enricher';
import { createLogger as createHandLogger } from './reference/hand-logger.js';
import { Metrics as HandMetrics } from './reference/hand-metrics.js';

const RESULT = fileURLToPath(new URL('../results/log-metrics.json', import.meta.url));
const API_KEY = 'sk_live_0123456789abcdef';

interface Figure {
  median: number;
  spread: [number, number];
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const figure = (xs: number[], digits = 0): Figure => {
  const round = (x: number) => Number(x.toFixed(digits));
  return { median: round(median(xs)), spread: [round(Math.min(...xs)), round(Math.max(...xs))] };
};
const show = (f: Figure, unit: string) => `${f.median} ${unit} (${f.spread.join('–')})`;

type AnyLogger = { info(msg: string, fields?: Record<string, unknown>): void; redactor: { add(s: string): void } };

function logLines(logger: AnyLogger, n: number): { perSecond: number; cpuUsPerLine: number } {
  logger.redactor.add(API_KEY);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    logger.info(i % 10 === 0 ? `request with key ${API_KEY} failed; retrying` : 'record answered', {
      partition: i % 12,
      offset: String(1_000_000 + i),
      requestId: `req-${i}`,
      status: 'accepted',
      attempt: 1 + (i % 3),
      detail: { endpoint: '/location/v1/validate', ms: i % 97 },
    });
  }
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { perSecond: Math.round((n / ms) * 1000), cpuUsPerLine: (used.user + used.system) / n };
}

function fill(m: {
  inc(name: string, labels?: Record<string, string>, by?: number): void;
  set(name: string, labels: Record<string, string>, v: number): void;
}) {
  for (let p = 0; p < 12; p++) m.set(METRIC.lag, { topic: 'addresses', partition: String(p) }, p * 10);
  for (const reason of ['not-json', 'no-address', 'too-large', 'field-error', 'unavailable']) m.inc(METRIC.dlq, { reason }, 3);
  for (const status of ['accepted', 'corrected', 'ambiguous', 'invalid', 'unavailable', 'unsupported-country']) m.inc(METRIC.records, { status }, 100);
  for (const c of ['A', 'B', 'C', 'D', 'E', 'F']) m.inc(METRIC.classes, { class: c }, 50);
  m.inc(METRIC.consumed, {}, 1000);
  m.inc(METRIC.produced, {}, 990);
}

async function scrape(render: () => string | Promise<string>, n: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i++) await render();
  return ((performance.now() - started) / n) * 1000;
}

function incPerMessage(inc: (i: number) => void, n: number): number {
  const started = performance.now();
  for (let i = 0; i < n; i++) inc(i);
  return ((performance.now() - started) * 1e6) / n;
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 100_000);
  const runs = Number(process.argv[3] ?? 5);
  const devNull = openSync('/dev/null', 'w');
  const write = (line: string) => void writeSync(devNull, line);
  const sides = {
    pino: () => logLines(createLogger({ level: 'info', write }), n),
    hand: () => logLines(createHandLogger({ level: 'info', write }), n),
  };
  sides.pino();
  sides.hand();
  const rate: Record<keyof typeof sides, number[]> = { pino: [], hand: [] };
  const cpu: Record<keyof typeof sides, number[]> = { pino: [], hand: [] };

  const metrics = new Metrics();
  const hand = new HandMetrics();
  fill(metrics);
  fill(hand);
  const registry = new Registry();
  const counter = new Counter({ name: 'bench_messages_total', help: 'x', labelNames: ['reason'], registers: [registry] });
  const incSides = {
    ours: (i: number) => metrics.inc(METRIC.dlq, { reason: i % 2 ? 'not-json' : 'no-address' }),
    promClient: (i: number) => counter.inc({ reason: i % 2 ? 'not-json' : 'no-address' }),
  };
  const incNs: Record<keyof typeof incSides, number[]> = { ours: [], promClient: [] };
  const scrapeUs: Record<'promClient' | 'hand', number[]> = { promClient: [], hand: [] };
  await scrape(() => metrics.render(), 200);
  await scrape(() => hand.render(), 200);

  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? (['pino', 'hand'] as const) : (['hand', 'pino'] as const);
    for (const side of order) {
      const res = sides[side]();
      rate[side].push(res.perSecond);
      cpu[side].push(res.cpuUsPerLine);
    }
    for (const side of r % 2 === 0 ? (['ours', 'promClient'] as const) : (['promClient', 'ours'] as const))
      incNs[side].push(incPerMessage(incSides[side], 1_000_000));
    for (const side of r % 2 === 0 ? (['promClient', 'hand'] as const) : (['hand', 'promClient'] as const)) {
      scrapeUs[side].push(await scrape(side === 'hand' ? () => hand.render() : () => metrics.render(), 1000));
    }
    console.log(
      `run ${r + 1}/${runs}: pino ${rate.pino.at(-1)} lines/s, hand-written ${rate.hand.at(-1)} lines/s; inc ${incNs.ours.at(-1)?.toFixed(0)} vs ${incNs.promClient.at(-1)?.toFixed(0)} ns; scrape ${scrapeUs.promClient.at(-1)?.toFixed(0)} vs ${scrapeUs.hand.at(-1)?.toFixed(0)} µs`,
    );
  }
  closeSync(devNull);

  const result = {
    benchmark: 'log-metrics',
    lines: n,
    runs,
    node: process.version,
    logger: {
      pinoLinesPerSecond: figure(rate.pino),
      handWrittenLinesPerSecond: figure(rate.hand),
      ratio: Number((median(rate.pino) / median(rate.hand)).toFixed(2)),
      pinoCpuUsPerLine: figure(cpu.pino, 2),
      handWrittenCpuUsPerLine: figure(cpu.hand, 2),
    },
    metricsIncNs: {
      dqKafkaMetricsInc: figure(incNs.ours, 1),
      promClientCounterInc: figure(incNs.promClient, 1),
      ratio: Number((median(incNs.ours) / median(incNs.promClient)).toFixed(2)),
    },
    scrapeUs: {
      promClientWithDefaultMetrics: figure(scrapeUs.promClient, 1),
      handWritten: figure(scrapeUs.hand, 1),
      ratio: Number((median(scrapeUs.promClient) / median(scrapeUs.hand)).toFixed(2)),
    },
  };
  console.log(
    `logger: pino ${show(result.logger.pinoLinesPerSecond, 'lines/s')} | hand-written ${show(result.logger.handWrittenLinesPerSecond, 'lines/s')} | ratio ${result.logger.ratio} | CPU per line ${result.logger.pinoCpuUsPerLine.median} vs ${result.logger.handWrittenCpuUsPerLine.median} µs`,
  );
  console.log(
    `metrics inc per message: Metrics.inc ${show(result.metricsIncNs.dqKafkaMetricsInc, 'ns')} | prom-client Counter.inc ${show(result.metricsIncNs.promClientCounterInc, 'ns')} | ratio ${result.metricsIncNs.ratio}`,
  );
  console.log(
    `scrape: prom-client (default metrics included) ${show(result.scrapeUs.promClientWithDefaultMetrics, 'µs')} | hand-written ${show(result.scrapeUs.handWritten, 'µs')} | ratio ${result.scrapeUs.ratio} (median of ${runs})`,
  );
  await mkdir(new URL('../results/', import.meta.url), { recursive: true });
  await writeFile(RESULT, `${JSON.stringify(result, null, 2)}\n`);
}

await main();
export {};
