export { acquireFileLock, FileLockHeldError, lockOwnerAlive, processAlive } from './file-lock.js';
export type { FileLockOptions, FileLockOwner, HeldFileLock } from './file-lock.js';
