/** Path of the describe request (contract 4.6). */
export const PHONE_DESCRIBE_PATH = '/rest/describe/phone_number_analysis/analyse_phone';
/** Path of the analysis request itself (docs/platform-contract.md). */
export const PHONE_ANALYSE_PATH = '/rest/phone_number_analysis/analyse_phone';

/** The language parameter's codes by label (contract 2.5: codes de, en, fr). */
export const PHONE_LANGUAGES: Readonly<Record<string, string>> = { German: 'de', English: 'en', French: 'fr' };

/** Defaults and ranges of the analysis parameters (contract 2.5). */
export const PHONE_PARAMETERS = {
  language: { default: 'en' },
  country: { length: 2 },
  par_format: { length: 32, default: 'INTERNATIONAL' },
  par_verbosity: { default: 2, min: 0, max: 3 },
} as const;

/**
 * The describe response, exactly the shape of contract 2.5: links (self, and the request itself)
 * and one content element with the four parameter descriptors.
 * @param realtimeUrl origin of the real-time services, without a trailing slash.
 */
export function phoneDescribe(realtimeUrl: string): object {
  const p = PHONE_PARAMETERS;
  return {
    links: [
      { rel: 'self', href: `${realtimeUrl}${PHONE_DESCRIBE_PATH}` },
      { rel: 'request', href: `${realtimeUrl}${PHONE_ANALYSE_PATH}` },
    ],
    content: [
      {
        parameters: [
          { name: 'language', type: 'Enum', values: { ...PHONE_LANGUAGES }, defaultValue: p.language.default },
          { name: 'country', type: 'String', length: p.country.length },
          { name: 'par_format', type: 'String', length: p.par_format.length, defaultValue: p.par_format.default },
          {
            name: 'par_verbosity',
            type: 'Numeric',
            defaultValue: p.par_verbosity.default,
            minimumValue: p.par_verbosity.min,
            maximumValue: p.par_verbosity.max,
          },
        ],
      },
    ],
  };
}
