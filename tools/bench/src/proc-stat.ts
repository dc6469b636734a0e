import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** Clock ticks per second of Linux's `/proc/<pid>/stat` times (USER_HZ). */
const TICKS_PER_SECOND = 100;

/** CPU times of a process or thread from Linux's `/proc`, in ms. */
export interface ProcCpu {
  ppid: number;
  /** utime + stime: the process's (or thread's) own CPU. */
  ownMs: number;
  /** cutime + cstime: the CPU of its children that have ended and been waited for. */
  childrenMs: number;
}

function parse(text: string): ProcCpu {
  // Fields after "(comm) ": state ppid … utime(14) stime(15) cutime(16) cstime(17), numbered from 1.
  const f = text.slice(text.lastIndexOf(') ') + 2).split(' ');
  const ms = (ticks: number): number => (ticks * 1000) / TICKS_PER_SECOND;
  return { ppid: Number(f[1]), ownMs: ms(Number(f[11]) + Number(f[12])), childrenMs: ms(Number(f[13]) + Number(f[14])) };
}

/** The CPU times in `/proc/<pid>/stat` (or `/proc/self/task/<tid>/stat`, …); undefined when it is gone or there is no `/proc`. */
export async function procCpu(pid: number | string | undefined, task?: string): Promise<ProcCpu | undefined> {
  if (pid === undefined) return undefined;
  try {
    return parse(await readFile(`/proc/${pid}${task === undefined ? '' : `/task/${task}`}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** {@link procCpu}, read synchronously (for a sample that must not yield to the event loop). */
export function procCpuSync(pid: number | string | undefined): ProcCpu | undefined {
  if (pid === undefined) return undefined;
  try {
    return parse(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}
