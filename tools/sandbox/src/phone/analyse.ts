import { PHONE_LANGUAGES, PHONE_PARAMETERS } from './describe.js';
import { COUNTRY_BY_CALLING_CODE, longestPrefix, PLANS, type PhoneType } from './numbering.js';

/** Parameters of one analysis request (docs/platform-contract.md: `language`, `country`, `par_*`, `in_*`). */
export interface PhoneQuery {
  language: string;
  /** Country for numbers written in national form (`030 …`). */
  country?: string;
  /** INTERNATIONAL (default), NATIONAL, E164 or RFC3966; anything else falls back to INTERNATIONAL. */
  format: string;
  /** 0 = syntax only … 3 = everything (default 2). */
  verbosity: number;
  /** The number as written (`in_phone`). */
  phone: string;
}

/** Reads and checks the query parameters; `message` names the parameter when one is wrong. */
export function parsePhoneQuery(q: URLSearchParams): { ok: true; value: PhoneQuery } | { ok: false; message: string } {
  const p = PHONE_PARAMETERS;
  const language = q.get('language') ?? p.language.default;
  if (!Object.values(PHONE_LANGUAGES).includes(language)) return { ok: false, message: 'language must be one of de, en, fr.' };
  const country = q.get('country') ?? undefined;
  if (country !== undefined && !/^[A-Za-z]{2}$/.test(country)) return { ok: false, message: 'country must be a two-letter country code such as DE.' };
  const format = q.get('par_format') ?? p.par_format.default;
  if (format.length > p.par_format.length) return { ok: false, message: `par_format must be at most ${p.par_format.length} characters.` };
  const vText = q.get('par_verbosity') ?? String(p.par_verbosity.default);
  const verbosity = /^\d+$/.test(vText) ? Number(vText) : NaN;
  if (!(verbosity >= p.par_verbosity.min && verbosity <= p.par_verbosity.max))
    return { ok: false, message: `par_verbosity must be an integer from ${p.par_verbosity.min} to ${p.par_verbosity.max}.` };
  const phone = q.get('in_phone');
  if (phone === null || phone.trim() === '') return { ok: false, message: 'in_phone is mandatory: the phone number to analyse.' };
  return {
    ok: true,
    value: { language, ...(country === undefined ? {} : { country: country.toUpperCase() }), format: format.toUpperCase(), verbosity, phone },
  };
}

const MESSAGES = {
  ok: { de: 'Rufnummer gültig.', en: 'Phone number valid.', fr: 'Numéro de téléphone valide.' },
  chars: {
    de: 'Unzulässige Zeichen in der Rufnummer.',
    en: 'The number contains characters that are not allowed.',
    fr: 'Le numéro contient des caractères non autorisés.',
  },
  country: { de: 'Land unbekannt oder nicht unterstützt.', en: 'Country unknown or not supported.', fr: 'Pays inconnu ou non pris en charge.' },
  length: { de: 'Die Rufnummer hat eine unzulässige Länge.', en: 'The number has an invalid length.', fr: 'Le numéro a une longueur invalide.' },
  prefix: { de: 'Ortsvorwahl fehlt oder ist ungültig.', en: 'The area code is missing or invalid.', fr: "L'indicatif régional manque ou est invalide." },
} as const;
type MessageKey = keyof typeof MESSAGES;

interface Parsed {
  iso: string;
  callingCode: string;
  prefix: string;
  subscriber: string;
  type: PhoneType;
  city: string;
}

function parse(q: PhoneQuery): Parsed | MessageKey {
  const raw = q.phone.trim();
  if (!/^\+?[\d\s\-/().]+$/.test(raw)) return 'chars';
  // "+49 (0)30 …": the trunk zero in parentheses is not dialled from abroad.
  const digits = raw.replace(/\(0\)/, '').replace(/\D/g, '');
  let iso: string | undefined;
  let nsn: string;
  if (raw.startsWith('+') || digits.startsWith('00')) {
    const intl = raw.startsWith('+') ? digits : digits.slice(2);
    const cc = longestPrefix(intl, Object.keys(COUNTRY_BY_CALLING_CODE));
    if (cc === undefined) return 'country';
    iso = COUNTRY_BY_CALLING_CODE[cc];
    nsn = intl.slice(cc.length);
  } else if (digits.startsWith('0')) {
    iso = q.country;
    nsn = digits.slice(1);
  } else {
    return 'prefix';
  }
  const plan = iso === undefined ? undefined : PLANS[iso];
  if (iso === undefined || plan === undefined) return 'country';
  if (nsn.startsWith('0')) return 'prefix';
  if (nsn.length < plan.nsnLength.min || nsn.length > plan.nsnLength.max) return 'length';
  let prefix = longestPrefix(nsn, plan.mobile);
  let type: PhoneType = 'MOBILE';
  let city = '';
  if (prefix === undefined) {
    prefix = longestPrefix(nsn, Object.keys(plan.special));
    type = prefix === undefined ? 'FIXED_LINE' : (plan.special[prefix] ?? 'UNKNOWN');
  }
  if (prefix === undefined) {
    prefix = longestPrefix(nsn, Object.keys(plan.areas));
    city = prefix === undefined ? '' : (plan.areas[prefix] ?? '');
  }
  // An area code outside the table: keep the number valid, split it where most codes end.
  prefix ??= nsn.slice(0, Math.min(4, nsn.length - 3));
  const subscriber = nsn.slice(prefix.length);
  if (subscriber.length < 3) return 'length';
  return { iso, callingCode: plan.callingCode, prefix, subscriber, type, city };
}

function formatNumber(p: Parsed, format: string): string {
  switch (format) {
    case 'NATIONAL':
      return `0${p.prefix} ${p.subscriber}`;
    case 'E164':
      return `+${p.callingCode}${p.prefix}${p.subscriber}`;
    case 'RFC3966':
      return `tel:+${p.callingCode}-${p.prefix}-${p.subscriber}`;
    default:
      return `+${p.callingCode} ${p.prefix} ${p.subscriber}`;
  }
}

/**
 * Analyses one number of Germany or Austria: syntax, formatted number, type (fixed line, mobile,
 * toll-free…) and the city of its area code. Output members grow with `verbosity`:
 * 0 `out_syntax`; 1 + `out_format`; 2 + `out_type`, `out_city`; 3 + `out_country`,
 * `out_areacode`, `out_subscriber`, `out_message`.
 */
export function analysePhone(q: PhoneQuery): Record<string, string> {
  const parsed = parse(q);
  const lang = q.language as 'de' | 'en' | 'fr';
  const valid = typeof parsed !== 'string';
  const out: Record<string, string> = { out_syntax: valid ? 'VALID' : 'INVALID' };
  if (q.verbosity >= 1) out['out_format'] = valid ? formatNumber(parsed, q.format) : '';
  if (q.verbosity >= 2) {
    out['out_type'] = valid ? parsed.type : 'UNKNOWN';
    out['out_city'] = valid ? parsed.city : '';
  }
  if (q.verbosity >= 3) {
    out['out_country'] = valid ? parsed.iso : (q.country ?? '');
    out['out_areacode'] = valid ? parsed.prefix : '';
    out['out_subscriber'] = valid ? parsed.subscriber : '';
    out['out_message'] = MESSAGES[valid ? 'ok' : parsed][lang];
  }
  return out;
}
