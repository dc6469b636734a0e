import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KafkaEnricherError } from './errors.js';
import type { Metrics } from './metrics.js';

/** A running /metrics and /healthz server. */
export interface MetricsServer {
  /** The port it listens on (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) and `GET /healthz` (200 `{"status":"ok"}` while
 * `healthy()` is true, else 503) on `host:port`; port 0 picks a free one. Without a `host`, on
 * every address of the machine, IPv6 and IPv4 (Node's unspecified address: `::`, dual-stack, or
 * `0.0.0.0` where the machine has no IPv6), so a scraper on an IPv6-only cluster network reaches it.
 *
 * @throws KafkaEnricherError `metrics-listen-failed` naming `setting` (the flag, or the variable
 * the port came from) when the port is taken.
 */
export async function startMetricsServer(
  metrics: Metrics,
  healthy: () => { ok: boolean; state: string },
  port: number,
  host: string | undefined = undefined,
  setting = '--metrics-port',
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (path === '/metrics') {
      metrics.render().then(
        (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
        (err: unknown) =>
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`),
      );
    } else if (path === '/healthz') {
      const h = healthy();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: h.ok ? 'ok' : 'unavailable', state: h.state }));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
    }
  });
  const bound = await new Promise<number>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new KafkaEnricherError(
          'metrics-listen-failed',
          `${setting}: cannot listen on ${host === undefined ? 'port ' : `${host}:`}${port} (${err.code ?? err.message}${err.code === 'EADDRINUSE' ? ': another process listens on that port' : ''}); pick another port or 0`,
          { cause: err },
        ),
      ),
    );
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
