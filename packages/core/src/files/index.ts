export { writeWholeFile, checkWholeFileTarget, WholeFileError } from './whole-file.js';
export { userCacheDir } from './cache-dir.js';
