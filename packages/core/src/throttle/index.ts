export type { EndpointId, Throttle } from './types.js';
export { ENDPOINT_IDS, DEFAULT_RATE_LIMITS, resolveThrottleOptions } from './limits.js';
export type { ThrottleOptions, ResolvedThrottleOptions } from './limits.js';
export { createSharedThrottle, attachSharedThrottle } from './shared.js';
export type { SharedThrottle } from './shared.js';
export {
  accountOf,
  BILLABLE_ENDPOINTS,
  BUDGET_UNREACHABLE,
  callsSent,
  checkSharedKey,
  createBudgetThrottle,
  createCallCounter,
  keyIdOf,
  MAX_CALLS_REACHED,
  probeBudget,
} from './budget.js';
export type { BudgetSpec, CallCounter, ClosableThrottle } from './budget.js';
