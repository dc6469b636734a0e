import { Socket } from 'node:net';
import pg from 'pg';
import { DB_CONNECT_TIMEOUT_MS, DB_QUERY_TIMEOUT_MS } from './db-timeouts.js';
import { endOrDrop } from './end-or-drop.js';

/** A pool whose `end` never waits on a server that stopped answering for more than a few seconds. */
export interface BoundedPool {
  pool: pg.Pool;
  /** Ends the pool; its sockets are destroyed when the server does not take the goodbye within 5 s. */
  end(): Promise<void>;
}

/**
 * A pool of up to `max` connections to a database that every process of an account shares (the
 * result store, the rate budget). A database that stops answering (a frozen server, a network
 * partition) must not hold a run forever: a query without an answer for 30 s, or a connection not
 * made within 15 s, fails (the caller reports the database as unreachable, exit 75), and closing
 * does not wait on it. `?query_timeout=<ms>` in the URL sets another query limit.
 */
export function createBoundedPool(connectionString: string | undefined, max: number): BoundedPool {
  const sockets = new Set<Socket>();
  const pool = new pg.Pool({
    connectionString,
    max,
    query_timeout: DB_QUERY_TIMEOUT_MS,
    connectionTimeoutMillis: DB_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // The pool's sockets, kept so that closing does not wait on a server that stopped answering.
    stream: () => {
      const socket = new Socket();
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      return socket;
    },
  });
  // An idle connection that drops must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  return {
    pool,
    // Ended when every socket has closed: a connection the pool gave up on (a query that timed
    // out) was told goodbye, but against a frozen server its socket stays half-open, and an open
    // socket keeps the process alive until the server answers again.
    end: () =>
      endOrDrop(
        async () => {
          await pool.end();
          await Promise.all([...sockets].map((socket) => new Promise((closed) => socket.once('close', closed))));
        },
        () => {
          for (const socket of sockets) socket.destroy();
        },
      ),
  };
}
