/** Checks of command-line flag values, shared by every connector's CLI. */
export interface FlagParsers {
  /** `value` if it is one of `allowed`, else a usage error naming the flag and the choices. */
  oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T;
  /** `text` as a number within [min, max] (an integer when `integer`), else a usage error. */
  number(flag: string, text: string, min: number, max: number, integer: boolean): number;
  /** `text` if it is an http(s) URL (undefined passes through), else a usage error. */
  url(flag: string, text: string | undefined): string | undefined;
}

/**
 * Flag checks whose failures are built by `fail(flag, problem)`, so each CLI keeps its own error
 * class and exit code while the checks and their messages are written once.
 */
export function createFlagParsers(fail: (flag: string, problem: string) => Error): FlagParsers {
  return {
    oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
      if (!(allowed as readonly string[]).includes(value)) throw fail(flag, `"${value}" is not one of ${allowed.join(', ')}`);
      return value as T;
    },
    number(flag, text, min, max, integer) {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
        throw fail(flag, `"${text}" must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
      }
      return n;
    },
    url(flag, text) {
      if (text === undefined) return undefined;
      let protocol: string;
      try {
        protocol = new URL(text).protocol;
      } catch {
        throw fail(flag, `"${text}" is not an http(s) URL`);
      }
      if (protocol !== 'http:' && protocol !== 'https:') throw fail(flag, `"${text}" is not an http(s) URL`);
      return text;
    },
  };
}
