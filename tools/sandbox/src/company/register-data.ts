/**
 * Word lists the register generator draws from: common German surnames, trades, industries,
 * real cities with some of their real postcodes, and the register court that keeps each city's
 * commercial register (several Länder centralise it: Mannheim for Karlsruhe and Heidelberg,
 * Jena for Erfurt, Stendal for Magdeburg, Charlottenburg for Berlin).
 */

/** Frequent German family names. */
export const SURNAMES = [
  'Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Schulz',
  'Hoffmann', 'Schäfer', 'Koch', 'Bauer', 'Richter', 'Klein', 'Wolf', 'Schröder', 'Neumann',
  'Schwarz', 'Zimmermann', 'Braun', 'Krüger', 'Hofmann', 'Hartmann', 'Lange', 'Schmitt',
  'Werner', 'Schmitz', 'Krause', 'Meier', 'Lehmann', 'Schmid', 'Schulze', 'Maier', 'Köhler',
  'Herrmann', 'König', 'Walter', 'Mayer', 'Huber', 'Kaiser', 'Fuchs', 'Peters', 'Lang',
  'Scholz', 'Möller', 'Weiß', 'Jung', 'Hahn', 'Schubert', 'Vogel', 'Friedrich', 'Keller',
  'Günther', 'Frank', 'Berger', 'Winkler', 'Roth', 'Beck', 'Lorenz', 'Baumann', 'Franke',
  'Albrecht', 'Schuster', 'Simon', 'Ludwig', 'Böhm', 'Winter', 'Kraus', 'Martin', 'Schumacher',
  'Krämer', 'Vogt', 'Stein', 'Jäger', 'Otto', 'Sommer', 'Groß', 'Seidel', 'Heinrich', 'Brandt',
  'Haas', 'Schreiber', 'Graf', 'Schulte', 'Dietrich', 'Ziegler', 'Kuhn', 'Kühn', 'Pohl', 'Engel',
  'Horn', 'Busch', 'Bergmann', 'Thomas', 'Voigt', 'Sauer', 'Arnold', 'Wolff', 'Pfeiffer',
  'Brinkmann', 'Hesse', 'Ebert', 'Kessler', 'Lindner', 'Vollmer', 'Rieger', 'Oswald', 'Dörr',
] as const;

/** Branch words that follow a family name: "Müller Maschinenbau GmbH". */
export const INDUSTRIES = [
  'Maschinenbau', 'Metallbau', 'Anlagenbau', 'Stahlbau', 'Holzbau', 'Elektrotechnik',
  'Haustechnik', 'Gebäudetechnik', 'Automation', 'Logistik', 'Spedition', 'Transporte',
  'Immobilien', 'Hausverwaltung', 'Bauunternehmung', 'Tiefbau', 'Dachbau', 'Fensterbau',
  'Software', 'Informationstechnik', 'Systemhaus', 'Medientechnik', 'Werbetechnik', 'Druckerei',
  'Verpackungen', 'Kunststofftechnik', 'Feinmechanik', 'Präzisionstechnik', 'Fahrzeugbau',
  'Autohaus', 'Reisen', 'Gastronomie', 'Getränke', 'Lebensmittel', 'Handelsgesellschaft',
  'Beteiligungen', 'Vermögensverwaltung', 'Consulting', 'Steuerberatung', 'Personalservice',
  'Gebäudereinigung', 'Sanitär', 'Heizungsbau', 'Energietechnik', 'Solartechnik', 'Medizintechnik',
  'Pharma', 'Textil', 'Möbelwerkstätten', 'Gartenbau', 'Landtechnik', 'Umwelttechnik',
] as const;

/** Trades run by a registered merchant: "Bäckerei Weber e.K.". */
export const TRADES = [
  'Bäckerei', 'Metzgerei', 'Konditorei', 'Apotheke', 'Blumenhaus', 'Buchhandlung', 'Optik',
  'Schreinerei', 'Tischlerei', 'Malerbetrieb', 'Elektro', 'Sanitärtechnik', 'Autowerkstatt',
  'Fahrradhaus', 'Weinhandlung', 'Modehaus', 'Schuhhaus', 'Juwelier', 'Raumausstattung',
  'Hörakustik', 'Reisebüro', 'Getränkemarkt', 'Zimmerei', 'Steinmetz', 'Glaserei',
] as const;

/** Region and fantasy words for names without a family name: "Rhein-Main Logistik GmbH". */
export const PREFIXES = [
  'Rhein-Main', 'Nordlicht', 'Alpenland', 'Weserland', 'Elbe', 'Spree', 'Havel', 'Isar', 'Ruhr',
  'Bodensee', 'Schwarzwald', 'Harz', 'Eifel', 'Allgäu', 'Hanse', 'Nordsee', 'Ostsee', 'Taunus',
  'Spessart', 'Odenwald', 'Lausitz', 'Vogtland', 'Sauerland', 'Münsterland', 'Franken', 'Saar',
  'Mosel', 'Neckar', 'Donau', 'Main', 'Sonnen', 'Stern', 'Adler', 'Phönix', 'Delta', 'Nova',
  'Optima', 'Proxima', 'Quadrat', 'Kompass', 'Zenit', 'Meridian', 'Atlas', 'Vektor', 'Primus',
] as const;

/** Street names found in most German cities. */
export const STREETS = [
  'Hauptstraße', 'Bahnhofstraße', 'Industriestraße', 'Gewerbestraße', 'Schillerstraße',
  'Goethestraße', 'Lindenstraße', 'Kirchstraße', 'Gartenstraße', 'Friedrichstraße',
  'Am Markt', 'Marktplatz', 'Ringstraße', 'Feldstraße', 'Mühlenweg', 'Im Gewerbepark',
  'Kantstraße', 'Lessingstraße', 'Mozartstraße', 'Beethovenstraße', 'Poststraße', 'Wiesenweg',
  'Dorfstraße', 'Berliner Straße', 'Hamburger Straße', 'Münchener Straße', 'Frankfurter Straße',
  'Kaiserstraße', 'Wilhelmstraße', 'Luisenstraße', 'Rathausplatz', 'Parkstraße', 'Talstraße',
  'Bergstraße', 'Waldweg', 'Am Hafen', 'Werkstraße', 'Robert-Bosch-Straße', 'Carl-Zeiss-Straße',
  'Max-Planck-Straße', 'Otto-Hahn-Straße', 'Siemensstraße', 'Daimlerstraße', 'Benzstraße',
] as const;

/** A city with real postcodes and the register court that keeps its commercial register. */
export interface CityEntry {
  readonly city: string;
  readonly court: string;
  readonly zips: readonly number[];
  /** Relative share of companies (larger cities get more). */
  readonly weight: number;
}

/** Cities the register places companies in; postcodes are JSON numbers (leading 0 dropped). */
export const CITIES: readonly CityEntry[] = [
  { city: 'Berlin', court: 'Amtsgericht Charlottenburg', weight: 14, zips: [10115, 10117, 10178, 10243, 10367, 10407, 10551, 10587, 10707, 10961, 12043, 12099, 12459, 13086, 13353, 13597, 14052, 14163] },
  { city: 'Hamburg', court: 'Amtsgericht Hamburg', weight: 9, zips: [20095, 20097, 20354, 20457, 21073, 22041, 22085, 22297, 22525, 22761, 22769] },
  { city: 'München', court: 'Amtsgericht München', weight: 9, zips: [80331, 80335, 80469, 80636, 80803, 80939, 81241, 81369, 81543, 81677, 81829] },
  { city: 'Köln', court: 'Amtsgericht Köln', weight: 7, zips: [50667, 50672, 50733, 50823, 50933, 51063, 51103, 51147] },
  { city: 'Frankfurt am Main', court: 'Amtsgericht Frankfurt am Main', weight: 7, zips: [60306, 60311, 60313, 60325, 60386, 60437, 60486, 60528, 60598] },
  { city: 'Stuttgart', court: 'Amtsgericht Stuttgart', weight: 5, zips: [70173, 70174, 70190, 70372, 70469, 70563, 70597] },
  { city: 'Düsseldorf', court: 'Amtsgericht Düsseldorf', weight: 5, zips: [40210, 40212, 40233, 40468, 40549, 40589] },
  { city: 'Leipzig', court: 'Amtsgericht Leipzig', weight: 4, zips: [4103, 4105, 4109, 4177, 4229, 4317, 4356] },
  { city: 'Dresden', court: 'Amtsgericht Dresden', weight: 4, zips: [1067, 1069, 1097, 1127, 1187, 1237, 1309] },
  { city: 'Dortmund', court: 'Amtsgericht Dortmund', weight: 4, zips: [44135, 44137, 44139, 44227, 44263, 44379] },
  { city: 'Essen', court: 'Amtsgericht Essen', weight: 4, zips: [45127, 45128, 45130, 45145, 45219, 45326] },
  { city: 'Bremen', court: 'Amtsgericht Bremen', weight: 3, zips: [28195, 28199, 28203, 28217, 28307, 28359] },
  { city: 'Hannover', court: 'Amtsgericht Hannover', weight: 4, zips: [30159, 30161, 30169, 30419, 30519, 30659] },
  { city: 'Nürnberg', court: 'Amtsgericht Nürnberg', weight: 4, zips: [90402, 90403, 90411, 90429, 90441, 90478] },
  { city: 'Duisburg', court: 'Amtsgericht Duisburg', weight: 2, zips: [47051, 47057, 47119, 47179, 47259] },
  { city: 'Bochum', court: 'Amtsgericht Bochum', weight: 2, zips: [44787, 44791, 44801, 44867] },
  { city: 'Wuppertal', court: 'Amtsgericht Wuppertal', weight: 2, zips: [42103, 42105, 42275, 42327] },
  { city: 'Bonn', court: 'Amtsgericht Bonn', weight: 2, zips: [53111, 53113, 53119, 53173, 53227] },
  { city: 'Münster', court: 'Amtsgericht Münster', weight: 2, zips: [48143, 48145, 48155, 48163] },
  { city: 'Mannheim', court: 'Amtsgericht Mannheim', weight: 3, zips: [68159, 68161, 68163, 68199, 68309] },
  { city: 'Karlsruhe', court: 'Amtsgericht Mannheim', weight: 2, zips: [76131, 76133, 76135, 76185, 76227] },
  { city: 'Heidelberg', court: 'Amtsgericht Mannheim', weight: 1, zips: [69115, 69117, 69120, 69126] },
  { city: 'Freiburg im Breisgau', court: 'Amtsgericht Freiburg', weight: 2, zips: [79098, 79100, 79106, 79110] },
  { city: 'Augsburg', court: 'Amtsgericht Augsburg', weight: 2, zips: [86150, 86152, 86153, 86157, 86167] },
  { city: 'Regensburg', court: 'Amtsgericht Regensburg', weight: 1, zips: [93047, 93049, 93053, 93055] },
  { city: 'Würzburg', court: 'Amtsgericht Würzburg', weight: 1, zips: [97070, 97072, 97076, 97080] },
  { city: 'Wiesbaden', court: 'Amtsgericht Wiesbaden', weight: 2, zips: [65183, 65185, 65189, 65203] },
  { city: 'Darmstadt', court: 'Amtsgericht Darmstadt', weight: 1, zips: [64283, 64289, 64293, 64295] },
  { city: 'Kassel', court: 'Amtsgericht Kassel', weight: 1, zips: [34117, 34119, 34127, 34134] },
  { city: 'Mainz', court: 'Amtsgericht Mainz', weight: 1, zips: [55116, 55118, 55122, 55131] },
  { city: 'Saarbrücken', court: 'Amtsgericht Saarbrücken', weight: 1, zips: [66111, 66113, 66117, 66121] },
  { city: 'Kiel', court: 'Amtsgericht Kiel', weight: 1, zips: [24103, 24105, 24114, 24143] },
  { city: 'Lübeck', court: 'Amtsgericht Lübeck', weight: 1, zips: [23552, 23554, 23560, 23566] },
  { city: 'Rostock', court: 'Amtsgericht Rostock', weight: 1, zips: [18055, 18057, 18069, 18119] },
  { city: 'Potsdam', court: 'Amtsgericht Potsdam', weight: 1, zips: [14467, 14469, 14471, 14482] },
  { city: 'Erfurt', court: 'Amtsgericht Jena', weight: 1, zips: [99084, 99085, 99089, 99096] },
  { city: 'Jena', court: 'Amtsgericht Jena', weight: 1, zips: [7743, 7745, 7747] },
  { city: 'Magdeburg', court: 'Amtsgericht Stendal', weight: 1, zips: [39104, 39106, 39108, 39112] },
  { city: 'Chemnitz', court: 'Amtsgericht Chemnitz', weight: 1, zips: [9111, 9112, 9113, 9126] },
  { city: 'Braunschweig', court: 'Amtsgericht Braunschweig', weight: 1, zips: [38100, 38102, 38106, 38118] },
  { city: 'Osnabrück', court: 'Amtsgericht Osnabrück', weight: 1, zips: [49074, 49076, 49078, 49084] },
  { city: 'Bielefeld', court: 'Amtsgericht Bielefeld', weight: 1, zips: [33602, 33604, 33609, 33615] },
  { city: 'Aachen', court: 'Amtsgericht Aachen', weight: 1, zips: [52062, 52064, 52066, 52072] },
];
