/** The `--map` of the sandbox's sample CSV (`makeSampleCsv`): address line, postal code, locality, country. */
export const SAMPLE_MAP = 'addressLine=strasse,postalCode=plz,locality=ort,country=land';

/** `dq-csv validate` arguments for a `;`-separated file of German addresses whose columns `map` names, then `more`. */
export function validateArgs(input: string, output: string, map: string, ...more: string[]): string[] {
  return ['validate', '--input', input, '--output', output, '--delimiter', ';', '--country', 'DE', '--map', map, ...more];
}

/** `dq-csv validate` arguments for the sandbox's sample CSV, then `more`. */
export function sampleArgs(input: string, output: string, ...more: string[]): string[] {
  return validateArgs(input, output, SAMPLE_MAP, ...more);
}
