import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The first line a child process prints on stdout (a server's URL, say). */
export async function firstLine(child: ChildProcess): Promise<string> {
  if (child.stdout === null) throw new Error('child has no stdout');
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  return line;
}

/** Sends SIGTERM to a child still running and waits until it has exited. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}
