/**
 * The one list of each vocabulary the engine and every connector share. Types, zod enums and CLI
 * choices are derived from these arrays; nothing else restates them.
 */

/** What the engine validates: addresses, or companies by search method (docs/platform-contract.md). */
export const MODES = ['address', 'company', 'tr', 'vat'] as const;
export type Mode = (typeof MODES)[number];

/** Quality classes of an address validation result (docs/platform-contract.md). */
export const RESULT_CLASSES = ['A', 'B', 'C', 'D', 'E', 'F'] as const;
export type ResultClass = (typeof RESULT_CLASSES)[number];

/** What became of one input record (docs/architecture.md). */
export const RECORD_STATUSES = ['accepted', 'review', 'invalid', 'invalid-input', 'unsupported-country', 'unavailable'] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

/** The statuses a result-class policy may assign. */
export const POLICY_STATUSES = ['accepted', 'review', 'invalid'] as const satisfies readonly RecordStatus[];
export type PolicyStatus = (typeof POLICY_STATUSES)[number];

/** Which address endpoint the engine calls; bulk work uses batch/sync (docs/platform-contract.md). */
export const ADDRESS_ENDPOINTS = ['batch', 'validate'] as const;
export type AddressEndpoint = (typeof ADDRESS_ENDPOINTS)[number];
