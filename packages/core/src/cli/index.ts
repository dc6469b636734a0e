export { createFlagParsers, ENGINE_FLAG_OPTIONS, ENGINE_FLAGS_USAGE } from './flags.js';
export type { EngineFlagSettings, FlagParsers } from './flags.js';
export { parseFlags, cliFailure } from './run-cli.js';
export type { CliFailure } from './run-cli.js';
export { exitWhenDone, runCommand } from './exit.js';
export { exitProcess, onStopSignals, STOP_SIGNALS } from './stop-signals.js';
export type { StopSignal } from './stop-signals.js';
export { checkEmptyFlags, commandLineRedactor, mapEntries, withoutUrlPasswords } from './command-line.js';
export type { MapEntry } from './command-line.js';
