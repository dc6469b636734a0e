/**
 * Timing checks that hold on a loaded machine. A lower bound (the code waited at least this long)
 * must hold on every attempt: a busy machine only makes waits longer. An upper bound (it did not
 * wait longer than this) is about the code, but a busy machine can stretch any single attempt, so
 * it must hold on at least one of `tries` attempts: a code that really waits too long fails them all.
 */
export async function bestOf<T>(tries: number, attempt: () => Promise<T>, fastEnough: (result: T) => boolean): Promise<{ results: T[]; fast: T | undefined }> {
  const results: T[] = [];
  for (let i = 0; i < tries; i++) {
    const result = await attempt();
    results.push(result);
    if (fastEnough(result)) return { results, fast: result };
  }
  return { results, fast: undefined };
}

/**
 * Waits until `done` holds, checking every `stepMs`; throws "timed out waiting for <what>" after
 * `timeoutMs`, so a test that fails here says what never happened.
 */
export async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
