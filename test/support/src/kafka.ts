import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** A Kafka cluster for one test file. */
export interface TestKafka {
  /** Bootstrap servers, `host:port` each. */
  brokers: string[];
  /** True when `KAFKA_BROKERS` pointed the harness at a real cluster. */
  external: boolean;
  /** Stops the mock cluster; a no-op for a real cluster. */
  stop(): Promise<void>;
}

/** Options of {@link startKafka}. */
export interface StartKafkaOptions {
  /** Environment to read `KAFKA_BROKERS` from; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** How long to wait for the mock cluster to announce its port, in ms; default 15 000. */
  startTimeoutMs?: number;
}

const READY = /replaced with ([0-9.]+:\d+)/;

/**
 * Gives a test a Kafka-protocol cluster. With `KAFKA_BROKERS=host:9092,...` set it uses that real
 * cluster and `stop()` does nothing. Otherwise it starts librdkafka's mock cluster through kcat
 * (Debian package `kcat`): one broker on a free local port, topics auto-created with 4 partitions
 * on first use. The mock cannot create topics through the admin API (it reports controller id 0
 * while numbering brokers from 1), so tests must rely on auto-creation, and consumer groups need
 * sessionTimeout ≥ 6000 ms because the mock delays a group's first join by ~3 s.
 */
export async function startKafka(options: StartKafkaOptions = {}): Promise<TestKafka> {
  const env = options.env ?? process.env;
  const configured = env['KAFKA_BROKERS']?.trim();
  if (configured) {
    const brokers = configured
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean);
    return { brokers, external: true, stop: async () => undefined };
  }
  const child = spawn('kcat', ['-q', '-C', '-t', '__keepalive', '-X', 'test.mock.num.brokers=1', '-b', 'localhost:1'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const broker = await waitForBroker(child, options.startTimeoutMs ?? 15_000);
  return {
    brokers: [broker],
    external: false,
    stop: () => stopChild(child),
  };
}

function waitForBroker(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const fail = (why: string): void => {
      cleanup();
      child.kill('SIGKILL');
      reject(
        new Error(
          `the kcat mock Kafka cluster did not start: ${why}. Install kcat (apt-get install kcat) or set KAFKA_BROKERS=host:port to use a real cluster. kcat said: ${output.slice(-500)}`,
        ),
      );
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = READY.exec(output);
      if (match?.[1]) {
        cleanup();
        // Keep draining stderr so kcat never blocks on a full pipe.
        child.stderr?.resume();
        resolve(match[1]);
      }
    };
    const onError = (err: Error): void => fail(err.message);
    const onExit = (code: number | null): void => fail(`kcat exited with code ${code}`);
    const timer = setTimeout(() => fail(`no broker address within ${timeoutMs} ms`), timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.off('error', onError);
      child.off('exit', onExit);
    };
    child.stderr?.on('data', onData);
    child.once('error', onError);
    child.once('exit', onExit);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
  });
}

/** A topic name no other test uses: `<prefix>-<random hex>`. */
export function uniqueTopic(prefix = 'dq-test'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** A consumer group id no other test uses. */
export function uniqueGroup(prefix = 'dq-group'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}
