export { acquireFileLock, FileLockHeldError, processAlive } from './file-lock.js';
export type { FileLockOptions, FileLockOwner, HeldFileLock } from './file-lock.js';
