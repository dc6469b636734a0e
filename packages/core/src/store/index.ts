export type { ResultStore, StoreInfo } from './types.js';
export { openStore, defaultStoreDir, redactUrl } from './open.js';
export type { OpenStoreOptions } from './open.js';
export { openLmdbStore } from './lmdb-store.js';
export { openPgStore, ensureStoreSchema, storeSchemaError, STORE_SCHEMA } from './pg-store.js';
export type { PgStoreOptions, PgQueryable } from './pg-store.js';
export { parseAge, formatAge, DEFAULT_MAX_AGE_MS } from './age.js';
export { storeKey } from './key.js';
export { StoreError } from './errors.js';
