import type { CallOutcome } from './messages.js';
import type { RequestFields } from './record-mapping.js';

/**
 * One distinct request the engine has handed to a worker and not yet seen answered. The batch
 * that sent it reads {@link PendingCall.outcome} directly; a promise is made only when another
 * batch joins the call (rare), so the common path allocates no promise per request.
 */
export class PendingCall {
  /** The outcome once settled. */
  outcome: CallOutcome | undefined;
  #promise: Promise<CallOutcome> | undefined;
  #resolve: ((outcome: CallOutcome) => void) | undefined;

  constructor(
    readonly key: string,
    readonly fields: RequestFields,
  ) {}

  /** Resolves with the outcome, at once if it is already known. */
  wait(): Promise<CallOutcome> {
    if (this.outcome !== undefined) return Promise.resolve(this.outcome);
    this.#promise ??= new Promise<CallOutcome>((resolve) => (this.#resolve = resolve));
    return this.#promise;
  }

  /** Records the outcome (the first one wins) and wakes the batches that joined. */
  settle(outcome: CallOutcome): void {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    this.#resolve?.(outcome);
  }
}
