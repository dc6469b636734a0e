/**
 * The instant answering server: a node:http server that answers every batch/sync request at once,
 * for benchmarks that measure the client side. It runs in a child process (the bench file forked
 * with `--serve`), so it never shares the measured event loop.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request's address fields, as sent. */
export type Address = Record<string, string>;

/** The answer to one request: its JSON body and the `x-service-request-id` header. */
export interface Answer {
  body: unknown;
  requestId: string;
}

/**
 * Child side: listens on a free port of 127.0.0.1, answers each request with `answer(address, call)`
 * (`call` counts from 1) and sends its port to the parent. With `reportCalls`, any message from the
 * parent is answered with the number of calls so far.
 */
export function serveInstant(answer: (address: Address, call: number) => Answer, options: { reportCalls?: boolean } = {}): void {
  let calls = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls += 1;
      const { body, requestId } = answer(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Address, calls);
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': requestId });
      res.end(JSON.stringify(body));
    });
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
  if (options.reportCalls) process.on('message', () => process.send?.(calls));
}

/** Parent side: forks `file` with `--serve` (which calls `serveInstant`) and waits for its port. */
export async function startInstantServer(file: string): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(file, ['--serve'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve(Number(m)));
    child.once('error', reject);
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** A fixed class-A body (Unter den Linden 1, 10117 Berlin) echoing only customerAddressId; request id `bench`. */
export function fixedClassA(a: Address): Answer {
  return {
    body: {
      customerAddressId: a['customerAddressId'],
      resultClass: 'A',
      results: [{ addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street: 'Unter den Linden', houseNumber: '1' }],
    },
    requestId: 'bench',
  };
}

/** A class-A body echoing the address as sent (country DE); request id as given. */
export function echoClassA(a: Address, requestId: string): Answer {
  const { customerAddressId, street, houseNumber, postalCode, locality } = a;
  return {
    body: { customerAddressId, resultClass: 'A', results: [{ addressType: 'delivery', country: 'DE', postalCode, locality, street, houseNumber }] },
    requestId,
  };
}

/** `Hauptstr. N` corrected to `Hauptstraße N` (class B), else the address as sent (class A); request id `bench-<street>`. */
export function correctHauptstr(a: Address): Answer {
  const street = a['street'] ?? '';
  const corrected = street.startsWith('Hauptstr. ');
  return {
    body: {
      customerAddressId: a['customerAddressId'],
      resultClass: corrected ? 'B' : 'A',
      results: [
        {
          addressType: 'delivery',
          country: a['country'],
          postalCode: a['postalCode'],
          locality: a['locality'],
          street: corrected ? `Hauptstraße ${street.slice('Hauptstr. '.length)}` : street,
          houseNumber: a['houseNumber'],
        },
      ],
    },
    requestId: `bench-${street}`,
  };
}
