/** How long closing waits for a database to take the goodbye before its sockets are dropped. */
const CLOSE_WAIT_MS = 5_000;

/**
 * Closes a database connection or pool with `end`; when the server does not take the goodbye
 * within 5 s (it stopped answering: a frozen server, a network partition), calls `drop` to destroy
 * its sockets, so that the server does not keep the process alive.
 */
export async function endOrDrop(end: () => Promise<unknown>, drop: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = end().then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_WAIT_MS)));
  const done = await Promise.race([ended, late]);
  clearTimeout(timer);
  if (!done) drop();
}
