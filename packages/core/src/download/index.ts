export { DownloadClient } from './download-client.js';
export type { DownloadClientOptions, DownloadOptions, DownloadProgress, DownloadResult } from './download-client.js';
export type { MinProgress } from './http.js';
export { parseContentDisposition, safeFileName } from './content-disposition.js';
export type { ContentDisposition, SafeFileName } from './content-disposition.js';
export { parseChecksumFile } from './checksum.js';
export { ChecksumMismatchError, DOWNLOAD_CODES, formatBytes, NoRoomError } from './errors.js';
export { syncDir } from './partial-file.js';
