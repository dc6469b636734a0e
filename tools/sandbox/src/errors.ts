/** Stable codes of the errors the sandbox itself throws (not the HTTP problems it serves). */
export type SandboxErrorCode = 'config-invalid' | 'config-unreadable' | 'listen-failed' | 'usage';

/** An error of the sandbox's own setup (config, CLI, listening); branch on `code`. */
export class SandboxError extends Error {
  readonly code: SandboxErrorCode;

  constructor(code: SandboxErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxError';
    this.code = code;
  }
}
