/** A country's numbering plan, reduced to what the analysis needs. */
export interface NumberingPlan {
  /** Country calling code without `+`. */
  callingCode: string;
  /** Area codes (without trunk 0) → city. */
  areas: Readonly<Record<string, string>>;
  /** Prefixes of mobile numbers (without trunk 0). */
  mobile: readonly string[];
  /** Prefix → service type for non-geographic numbers. */
  special: Readonly<Record<string, PhoneType>>;
  /** Allowed length of the national significant number, in digits. */
  nsnLength: { min: number; max: number };
}

/** `out_type` values. */
export type PhoneType = 'FIXED_LINE' | 'MOBILE' | 'TOLL_FREE' | 'PREMIUM_RATE' | 'SHARED_COST' | 'UNKNOWN';

/** Germany (Bundesnetzagentur plan): area codes of the larger towns, mobile 15x/16x/17x. */
const DE: NumberingPlan = {
  callingCode: '49',
  areas: {
    '30': 'Berlin',
    '40': 'Hamburg',
    '69': 'Frankfurt am Main',
    '89': 'München',
    '201': 'Essen',
    '202': 'Wuppertal',
    '211': 'Düsseldorf',
    '221': 'Köln',
    '228': 'Bonn',
    '231': 'Dortmund',
    '234': 'Bochum',
    '241': 'Aachen',
    '251': 'Münster',
    '331': 'Potsdam',
    '341': 'Leipzig',
    '345': 'Halle (Saale)',
    '351': 'Dresden',
    '361': 'Erfurt',
    '371': 'Chemnitz',
    '381': 'Rostock',
    '391': 'Magdeburg',
    '421': 'Bremen',
    '431': 'Kiel',
    '451': 'Lübeck',
    '511': 'Hannover',
    '521': 'Bielefeld',
    '531': 'Braunschweig',
    '541': 'Osnabrück',
    '611': 'Wiesbaden',
    '621': 'Mannheim',
    '631': 'Kaiserslautern',
    '681': 'Saarbrücken',
    '711': 'Stuttgart',
    '721': 'Karlsruhe',
    '731': 'Ulm',
    '761': 'Freiburg im Breisgau',
    '821': 'Augsburg',
    '911': 'Nürnberg',
    '921': 'Bayreuth',
    '931': 'Würzburg',
    '941': 'Regensburg',
    '6131': 'Mainz',
    '6221': 'Heidelberg',
    '7071': 'Tübingen',
    '8031': 'Rosenheim',
  },
  mobile: ['151', '152', '155', '157', '159', '160', '162', '163', '170', '171', '172', '173', '174', '175', '176', '177', '178', '179'],
  special: { '800': 'TOLL_FREE', '900': 'PREMIUM_RATE', '180': 'SHARED_COST' },
  nsnLength: { min: 6, max: 11 },
};

/** Austria (RTR plan): area codes of the larger towns, mobile 65x–69x. */
const AT: NumberingPlan = {
  callingCode: '43',
  areas: {
    '1': 'Wien',
    '316': 'Graz',
    '463': 'Klagenfurt',
    '512': 'Innsbruck',
    '662': 'Salzburg',
    '732': 'Linz',
    '2622': 'Wiener Neustadt',
    '2742': 'St. Pölten',
    '3842': 'Leoben',
    '4242': 'Villach',
    '5572': 'Dornbirn',
    '5574': 'Bregenz',
    '7242': 'Wels',
  },
  mobile: ['650', '660', '661', '664', '665', '667', '670', '676', '677', '678', '680', '681', '688', '690', '699'],
  special: { '800': 'TOLL_FREE', '900': 'PREMIUM_RATE', '930': 'PREMIUM_RATE', '810': 'SHARED_COST' },
  nsnLength: { min: 5, max: 13 },
};

/** Numbering plans by ISO country code. */
export const PLANS: Readonly<Record<string, NumberingPlan>> = { DE, AT };

/** ISO country code by calling code. */
export const COUNTRY_BY_CALLING_CODE: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(PLANS).map(([iso, plan]) => [plan.callingCode, iso]),
);

/** The longest prefix of `nsn` that is a key of `table` (area codes are prefix-free per plan). */
export function longestPrefix(nsn: string, keys: Iterable<string>): string | undefined {
  let best: string | undefined;
  for (const k of keys) if (nsn.startsWith(k) && (best === undefined || k.length > best.length)) best = k;
  return best;
}
