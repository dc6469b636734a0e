/**
 * Longest wait for one query to a PostgreSQL database the tools use (the shared store and budget
 * take milliseconds a query; dq-pg's table work seconds): a server that stops answering (frozen, a
 * network partition) fails the query instead of holding the run, which ends with exit 75.
 */
export const DB_QUERY_TIMEOUT_MS = 30_000;
/** Longest wait for a new connection to such a database. */
export const DB_CONNECT_TIMEOUT_MS = 15_000;
