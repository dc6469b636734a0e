export { writeWholeFile, checkWholeFileTarget, WholeFileError } from './whole-file.js';
