/**
 * The engine's piscina worker: a {@link createTaskRunner} runner per thread, its log lines relayed
 * to the engine's logger. Everything it returns is plain data (errors as `ErrorData`).
 */
import { workerData } from 'node:worker_threads';
import { createLogger } from '../log/index.js';
import type { CallTask, TaskResult, WorkerInit } from './messages.js';
import { relayWriter } from './log-relay.js';
import { createTaskRunner } from './task-runner.js';

const init = workerData as WorkerInit;
const logger = createLogger({ level: init.logLevel, write: relayWriter(init.logChannel) });
logger.redactor.add(init.apiKey);
const runner = createTaskRunner(init, logger);

/** Piscina task handler: outcomes in request order. */
export default function runTask(task: CallTask): Promise<TaskResult> {
  return runner.run(task);
}
