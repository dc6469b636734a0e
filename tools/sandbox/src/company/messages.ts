/** Message languages of `/companies/v2` (query parameter `lang`, contract 4.7). */
export const LANGUAGES = ['de', 'en', 'fr'] as const;
/** One of {@link LANGUAGES}. */
export type Language = (typeof LANGUAGES)[number];

/** Stable identifiers of the 400 messages; tests and callers branch on these, not on text. */
export type MessageCode =
  | 'PARAM_REPEATED'
  | 'PARAM_NOT_ONE_OF'
  | 'PARAM_NOT_INTEGER_IN_RANGE'
  | 'PARAM_NOT_NON_NEGATIVE_INTEGER'
  | 'BODY_NOT_OBJECT'
  | 'FIELD_MISSING'
  | 'FIELD_EMPTY'
  | 'FIELD_WRONG_TYPE'
  | 'FIELD_NOT_ONE_OF'
  | 'VAT_UNKNOWN_COUNTRY';

/** Parameters of a message; values from the request are shortened before they are echoed. */
export type MessageParams = Readonly<Record<string, string>>;
type Template = (p: MessageParams) => string;

/** Kinds of value a body field can require. */
export type ExpectedValue = 'string' | 'zip' | 'trNo';

const EXPECTED: Readonly<Record<ExpectedValue, Readonly<Record<Language, string>>>> = {
  string: { en: 'a string', de: 'eine Zeichenkette', fr: 'une chaîne de caractères' },
  zip: {
    en: 'a postcode of 1 to 5 digits (number or string)',
    de: 'eine Postleitzahl mit 1 bis 5 Ziffern (Zahl oder Zeichenkette)',
    fr: 'un code postal de 1 à 5 chiffres (nombre ou chaîne)',
  },
  trNo: {
    en: 'a positive whole register number (number or string of digits)',
    de: 'eine positive ganze Registernummer (Zahl oder Ziffernfolge)',
    fr: 'un numéro de registre entier positif (nombre ou chaîne de chiffres)',
  },
};

function expected(p: MessageParams, lang: Language): string {
  return EXPECTED[p.expected as ExpectedValue]?.[lang] ?? String(p.expected);
}

const TEMPLATES: Readonly<Record<MessageCode, Readonly<Record<Language, Template>>>> = {
  PARAM_REPEATED: {
    en: (p) => `Query parameter '${p.name}' is given more than once; give it once.`,
    de: (p) => `Der Abfrageparameter '${p.name}' ist mehrfach angegeben; bitte nur einmal angeben.`,
    fr: (p) => `Le paramètre de requête '${p.name}' est donné plusieurs fois ; donnez-le une seule fois.`,
  },
  PARAM_NOT_ONE_OF: {
    en: (p) => `Query parameter '${p.name}' must be one of ${p.allowed}; got '${p.value}'.`,
    de: (p) => `Der Abfrageparameter '${p.name}' muss einer von ${p.allowed} sein; erhalten: '${p.value}'.`,
    fr: (p) => `Le paramètre de requête '${p.name}' doit valoir ${p.allowed} ; reçu : '${p.value}'.`,
  },
  PARAM_NOT_INTEGER_IN_RANGE: {
    en: (p) => `Query parameter '${p.name}' must be an integer from ${p.min} to ${p.max}; got '${p.value}'.`,
    de: (p) => `Der Abfrageparameter '${p.name}' muss eine ganze Zahl von ${p.min} bis ${p.max} sein; erhalten: '${p.value}'.`,
    fr: (p) => `Le paramètre de requête '${p.name}' doit être un entier de ${p.min} à ${p.max} ; reçu : '${p.value}'.`,
  },
  PARAM_NOT_NON_NEGATIVE_INTEGER: {
    en: (p) => `Query parameter '${p.name}' must be an integer of 0 or more; got '${p.value}'.`,
    de: (p) => `Der Abfrageparameter '${p.name}' muss eine ganze Zahl ab 0 sein; erhalten: '${p.value}'.`,
    fr: (p) => `Le paramètre de requête '${p.name}' doit être un entier positif ou nul ; reçu : '${p.value}'.`,
  },
  BODY_NOT_OBJECT: {
    en: (p) => `The request body must be a JSON object with the input fields of searchMethod '${p.method}'.`,
    de: (p) => `Der Request-Body muss ein JSON-Objekt mit den Eingabefeldern der searchMethod '${p.method}' sein.`,
    fr: (p) => `Le corps de la requête doit être un objet JSON avec les champs de la searchMethod '${p.method}'.`,
  },
  FIELD_MISSING: {
    en: (p) => `Field '${p.field}' is mandatory for searchMethod '${p.method}' and must not be empty.`,
    de: (p) => `Das Feld '${p.field}' ist für die searchMethod '${p.method}' Pflicht und darf nicht leer sein.`,
    fr: (p) => `Le champ '${p.field}' est obligatoire pour la searchMethod '${p.method}' et ne doit pas être vide.`,
  },
  FIELD_EMPTY: {
    en: (p) => `Field '${p.field}' must not be empty or null; leave it out instead.`,
    de: (p) => `Das Feld '${p.field}' darf nicht leer oder null sein; bitte stattdessen weglassen.`,
    fr: (p) => `Le champ '${p.field}' ne doit pas être vide ou null ; omettez-le plutôt.`,
  },
  FIELD_WRONG_TYPE: {
    en: (p) => `Field '${p.field}' must be ${expected(p, 'en')}.`,
    de: (p) => `Das Feld '${p.field}' muss ${expected(p, 'de')} sein.`,
    fr: (p) => `Le champ '${p.field}' doit être ${expected(p, 'fr')}.`,
  },
  FIELD_NOT_ONE_OF: {
    en: (p) => `Field '${p.field}' must be one of ${p.allowed}; got '${p.value}'.`,
    de: (p) => `Das Feld '${p.field}' muss einer von ${p.allowed} sein; erhalten: '${p.value}'.`,
    fr: (p) => `Le champ '${p.field}' doit valoir ${p.allowed} ; reçu : '${p.value}'.`,
  },
  VAT_UNKNOWN_COUNTRY: {
    en: (p) => `Field 'vatId' starts with '${p.prefix}', which is not a known country prefix; supported: ${p.allowed}.`,
    de: (p) => `Das Feld 'vatId' beginnt mit '${p.prefix}', das ist kein bekanntes Länderkürzel; unterstützt: ${p.allowed}.`,
    fr: (p) => `Le champ 'vatId' commence par '${p.prefix}', qui n'est pas un préfixe de pays connu ; pris en charge : ${p.allowed}.`,
  },
};

const MAX_ECHO = 40;

/** Shortens a value taken from the request so a message stays readable. */
export function echo(value: string): string {
  return value.length > MAX_ECHO ? `${value.slice(0, MAX_ECHO)}…` : value;
}

/** The message text for `code` in `lang`. */
export function formatMessage(code: MessageCode, lang: Language, params: MessageParams): string {
  return TEMPLATES[code][lang](params);
}

/** A 400 cause: a stable `code`, the parameter or field it concerns, and the message data. */
export class BadRequestError extends Error {
  readonly code: MessageCode;
  readonly params: MessageParams;

  constructor(code: MessageCode, params: MessageParams) {
    super(formatMessage(code, 'en', params));
    this.name = 'BadRequestError';
    this.code = code;
    this.params = params;
  }
}
