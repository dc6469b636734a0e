export { createFlagParsers } from './flags.js';
export type { FlagParsers } from './flags.js';
