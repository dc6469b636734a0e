export { createDownloadStore } from './store.js';
export type { DownloadStore, DownloadStoreOptions, DownloadFile, DownloadNotFound } from './store.js';
export { dataArtifacts, INSTALLERS, SOFTWARE_VERSIONS, INT_REGIONS, DATA_COUNTRIES } from './catalog.js';
