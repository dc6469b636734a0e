import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the slow path does with one request: how late it passes it on, and whether it then holds the answer back. */
export interface Passage {
  lateMs: number;
  withhold: boolean;
}

/** A running slow path: its URL, how many requests it passed on late and held back, and its close. */
export interface SlowPath {
  url: string;
  late(): number;
  withheld(): number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function read(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * A proxy in front of the sandbox, as a slow path to the platform: each request reaches the
 * sandbox (which counts it when it arrives) as late as `decide` says; its answer is passed back, or
 * held back (`withhold`) until the client gives up: a timeout after the platform counted the request.
 */
export async function startSlowPath(target: string, decide: () => Passage): Promise<SlowPath> {
  let late = 0;
  let withheld = 0;
  const proxy: Server = createServer((req, res) => {
    const { lateMs, withhold } = decide();
    void (async () => {
      const body = await read(req);
      if (lateMs > 0) {
        late++;
        await sleep(lateMs);
      }
      const answer = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers: { authorization: String(req.headers.authorization), 'content-type': String(req.headers['content-type']) },
        body,
      });
      const text = await answer.text();
      if (withhold) {
        withheld++;
        return; // the client times out; its socket closes
      }
      const retryAfter = answer.headers.get('retry-after');
      res.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
        ...(retryAfter === null ? {} : { 'retry-after': retryAfter }),
      });
      res.end(text);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    late: () => late,
    withheld: () => withheld,
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
