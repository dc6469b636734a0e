/**
 * German towns of the sandbox's reference data: real names, real postal codes (a subset of each
 * town's codes), the district a code belongs to where the town is large, and the town centre's
 * real WGS84 position. Street layouts are generated from these in reference-data.ts.
 */

/** One town as written here; `postalCodes` lists "code" or "code district" entries, comma-separated. */
export interface TownSeed {
  name: string;
  abbreviation?: string;
  /** Further spellings accepted as normalised input, e.g. "Frankfurt/Main". */
  aliases?: readonly string[];
  lat: number;
  lon: number;
  postalCodes: string;
  /** Streets this town is known for, placed before the generic ones; "Name@code" starts one in its real postal area. */
  streets?: readonly string[];
}

export const GERMAN_TOWNS: readonly TownSeed[] = [
  {
    name: 'Berlin',
    lat: 52.52,
    lon: 13.405,
    postalCodes:
      '10115 Mitte, 10117 Mitte, 10119 Mitte, 10178 Mitte, 10243 Friedrichshain, 10245 Friedrichshain, ' +
      '10247 Friedrichshain, 10249 Friedrichshain, 10405 Prenzlauer Berg, 10435 Prenzlauer Berg, ' +
      '10437 Prenzlauer Berg, 10551 Moabit, 10553 Moabit, 10585 Charlottenburg, 10623 Charlottenburg, ' +
      '10627 Charlottenburg, 10707 Wilmersdorf, 10715 Wilmersdorf, 10777 Schöneberg, 10827 Schöneberg, ' +
      '10961 Kreuzberg, 10997 Kreuzberg, 10999 Kreuzberg, 12043 Neukölln, 12047 Neukölln, 12053 Neukölln, ' +
      '12099 Tempelhof, 12163 Steglitz, 13347 Wedding, 13353 Wedding, 13581 Spandau, 14193 Grunewald',
    streets: [
      'Unter den Linden@10117',
      'Friedrichstraße@10117',
      'Kurfürstendamm@10707',
      'Karl-Marx-Allee@10243',
      'Torstraße@10119',
      'Oranienstraße@10997',
      'Schönhauser Allee@10437',
      'Straße des 17. Juni@10623',
      'Invalidenstraße@10115',
      'Sonnenallee@12047',
    ],
  },
  {
    name: 'Hamburg',
    lat: 53.5511,
    lon: 9.9937,
    postalCodes:
      '20095 Altstadt, 20099 St. Georg, 20144 Eimsbüttel, 20249 Eppendorf, 20354 Neustadt, ' +
      '20355 Neustadt, 20357 Sternschanze, 20359 St. Pauli, 22081 Barmbek-Süd, 22303 Winterhude, ' +
      '22765 Ottensen, 22767 Altona-Altstadt, 21073 Harburg',
    streets: ['Mönckebergstraße@20095', 'Jungfernstieg@20354', 'Reeperbahn@20359', 'Elbchaussee@22765', 'Große Bergstraße@22767', 'Steindamm@20099'],
  },
  {
    name: 'München',
    lat: 48.1374,
    lon: 11.5755,
    postalCodes:
      '80331 Altstadt-Lehel, 80333 Maxvorstadt, 80335 Maxvorstadt, 80336 Ludwigsvorstadt, ' +
      '80469 Isarvorstadt, 80539 Altstadt-Lehel, 80634 Neuhausen, 80796 Schwabing, 80801 Schwabing, ' +
      '81369 Sendling, 81541 Au, 81667 Haidhausen',
    streets: [
      'Maximilianstraße@80539',
      'Leopoldstraße@80801',
      'Kaufingerstraße@80331',
      'Sendlinger Straße@80331',
      'Theresienstraße@80333',
      'Nymphenburger Straße@80634',
    ],
  },
  {
    name: 'Köln',
    lat: 50.9375,
    lon: 6.9603,
    postalCodes:
      '50667 Altstadt-Nord, 50668 Neustadt-Nord, 50670 Neustadt-Nord, 50672 Neustadt-Nord, ' +
      '50674 Neustadt-Süd, 50676 Altstadt-Süd, 50677 Neustadt-Süd, 50733 Nippes, 50823 Ehrenfeld, ' +
      '50931 Lindenthal, 50996 Rodenkirchen, 51063 Mülheim',
    streets: ['Hohe Straße@50667', 'Schildergasse@50667', 'Aachener Straße@50674', 'Venloer Straße@50823', 'Ehrenstraße@50672', 'Severinstraße@50676'],
  },
  {
    name: 'Frankfurt am Main',
    abbreviation: 'Frankfurt a. M.',
    aliases: ['Frankfurt/Main', 'Frankfurt Main'],
    lat: 50.1109,
    lon: 8.6821,
    postalCodes:
      '60311 Innenstadt, 60313 Innenstadt, 60316 Nordend-Ost, 60318 Nordend-West, 60322 Westend-Nord, ' +
      '60325 Westend-Süd, 60329 Bahnhofsviertel, 60385 Bornheim, 60486 Bockenheim, 60594 Sachsenhausen, 65929 Höchst',
    streets: ['Zeil@60313', 'Berger Straße@60316', 'Kaiserstraße@60329', 'Schweizer Straße@60594', 'Große Friedberger Straße@60313', 'Leipziger Straße@60486'],
  },
  {
    name: 'Stuttgart',
    lat: 48.7758,
    lon: 9.1829,
    postalCodes: '70173 Mitte, 70174 Mitte, 70176 West, 70178 Süd, 70180 Süd, 70182 Mitte, 70190 Ost, 70191 Nord, ' + '70372 Bad Cannstatt, 70469 Feuerbach',
    streets: ['Königstraße@70173', 'Calwer Straße@70173', 'Tübinger Straße@70178', 'Neckarstraße@70190', 'Rotebühlstraße@70178'],
  },
  {
    name: 'Düsseldorf',
    lat: 51.2277,
    lon: 6.7735,
    postalCodes:
      '40210 Stadtmitte, 40211 Pempelfort, 40212 Stadtmitte, 40213 Altstadt, 40215 Friedrichstadt, ' +
      '40217 Unterbilk, 40223 Bilk, 40225 Bilk, 40227 Oberbilk, 40233 Flingern, 40474 Golzheim, 40545 Oberkassel',
    streets: ['Königsallee@40212', 'Schadowstraße@40212', 'Berliner Allee@40212', 'Kasernenstraße@40213', 'Bilker Allee@40217'],
  },
  {
    name: 'Leipzig',
    lat: 51.3397,
    lon: 12.3731,
    postalCodes:
      '04103 Zentrum-Ost, 04105 Zentrum-Nord, 04107 Zentrum-Süd, 04109 Zentrum, 04155 Gohlis, ' +
      '04177 Lindenau, 04229 Plagwitz, 04275 Südvorstadt, 04317 Reudnitz',
    streets: ['Karl-Liebknecht-Straße@04275', 'Grimmaische Straße@04109', 'Petersstraße@04109', 'Eisenbahnstraße@04317', 'Jahnallee@04177'],
  },
  {
    name: 'Dresden',
    lat: 51.0504,
    lon: 13.7373,
    postalCodes:
      '01067 Innere Altstadt, 01069 Südvorstadt, 01097 Innere Neustadt, 01099 Äußere Neustadt, ' + '01127 Pieschen, 01277 Blasewitz, 01307 Johannstadt',
    streets: ['Prager Straße@01069', 'Königsbrücker Straße@01099', 'Bautzner Straße@01099', 'Alaunstraße@01099', 'Wilsdruffer Straße@01067'],
  },
  {
    name: 'Hannover',
    lat: 52.3759,
    lon: 9.732,
    postalCodes: '30159, 30161, 30163, 30165, 30167, 30169, 30171, 30173, 30175',
    streets: ['Georgstraße', 'Lister Meile'],
  },
  {
    name: 'Nürnberg',
    lat: 49.4521,
    lon: 11.0767,
    postalCodes: '90402, 90403, 90408, 90409, 90419, 90429, 90443, 90459, 90461, 90478, 90489',
    streets: ['Karolinenstraße', 'Königstraße'],
  },
  { name: 'Bremen', lat: 53.0793, lon: 8.8017, postalCodes: '28195, 28199, 28203, 28205, 28209, 28211, 28215, 28217', streets: ['Sögestraße', 'Obernstraße'] },
  {
    name: 'Essen',
    lat: 51.4556,
    lon: 7.0116,
    postalCodes: '45127, 45128, 45130, 45131, 45138, 45141, 45143, 45145, 45147',
    streets: ['Kettwiger Straße', 'Rüttenscheider Straße'],
  },
  { name: 'Dortmund', lat: 51.5136, lon: 7.4653, postalCodes: '44135, 44137, 44139, 44141, 44143, 44145, 44147', streets: ['Westenhellweg', 'Ostenhellweg'] },
  { name: 'Duisburg', lat: 51.4344, lon: 6.7623, postalCodes: '47051, 47053, 47057, 47058', streets: ['Königstraße'] },
  { name: 'Bochum', lat: 51.4818, lon: 7.2162, postalCodes: '44787, 44789, 44791, 44793, 44795', streets: ['Kortumstraße'] },
  { name: 'Wuppertal', lat: 51.2562, lon: 7.1508, postalCodes: '42103, 42105, 42107, 42275, 42277, 42283' },
  { name: 'Bielefeld', lat: 52.0302, lon: 8.5325, postalCodes: '33602, 33604, 33607, 33609, 33611, 33613, 33615' },
  { name: 'Bonn', lat: 50.7374, lon: 7.0982, postalCodes: '53111, 53113, 53115, 53117, 53119, 53173', streets: ['Poppelsdorfer Allee'] },
  { name: 'Münster', lat: 51.9607, lon: 7.6261, postalCodes: '48143, 48145, 48147, 48149, 48151, 48153, 48155', streets: ['Prinzipalmarkt'] },
  { name: 'Karlsruhe', lat: 49.0069, lon: 8.4037, postalCodes: '76131, 76133, 76135, 76137, 76139' },
  { name: 'Mannheim', lat: 49.4875, lon: 8.466, postalCodes: '68159, 68161, 68163, 68165, 68167, 68169', streets: ['Planken'] },
  { name: 'Augsburg', lat: 48.3705, lon: 10.8978, postalCodes: '86150, 86152, 86153, 86154, 86156, 86157, 86159, 86161', streets: ['Maximilianstraße'] },
  { name: 'Wiesbaden', lat: 50.0782, lon: 8.2398, postalCodes: '65183, 65185, 65187, 65189, 65191, 65193, 65195, 65197', streets: ['Wilhelmstraße'] },
  { name: 'Mainz', lat: 49.9929, lon: 8.2473, postalCodes: '55116, 55118, 55120, 55122, 55124, 55126, 55127, 55128, 55129, 55130, 55131' },
  { name: 'Kiel', lat: 54.3233, lon: 10.1228, postalCodes: '24103, 24105, 24106, 24107, 24109, 24113, 24114, 24116', streets: ['Holstenstraße'] },
  {
    name: 'Lübeck',
    lat: 53.8655,
    lon: 10.6866,
    postalCodes: '23552, 23554, 23556, 23558, 23560, 23562, 23564, 23566, 23568, 23569',
    streets: ['Breite Straße'],
  },
  { name: 'Rostock', lat: 54.0924, lon: 12.0991, postalCodes: '18055, 18057, 18059, 18069, 18106, 18107', streets: ['Kröpeliner Straße'] },
  {
    name: 'Erfurt',
    lat: 50.9848,
    lon: 11.0299,
    postalCodes: '99084, 99085, 99086, 99087, 99089, 99091, 99092, 99094, 99096, 99097, 99098, 99099',
    streets: ['Anger'],
  },
  { name: 'Magdeburg', lat: 52.1205, lon: 11.6276, postalCodes: '39104, 39106, 39108, 39110, 39112, 39114' },
  { name: 'Potsdam', lat: 52.3906, lon: 13.0645, postalCodes: '14467, 14469, 14471, 14473, 14476, 14478, 14480, 14482', streets: ['Brandenburger Straße'] },
  {
    name: 'Freiburg im Breisgau',
    abbreviation: 'Freiburg i. Br.',
    aliases: ['Freiburg'],
    lat: 47.999,
    lon: 7.8421,
    postalCodes: '79098, 79100, 79102, 79104, 79106, 79108, 79110, 79111, 79112, 79114, 79115, 79117',
  },
  { name: 'Heidelberg', lat: 49.3988, lon: 8.6724, postalCodes: '69115, 69117, 69118, 69120, 69121, 69123, 69124, 69126' },
  { name: 'Regensburg', lat: 49.0134, lon: 12.1016, postalCodes: '93047, 93049, 93051, 93053, 93055, 93057, 93059' },
  { name: 'Würzburg', lat: 49.7913, lon: 9.9534, postalCodes: '97070, 97072, 97074, 97076, 97078, 97080, 97082, 97084' },
  { name: 'Aachen', lat: 50.7753, lon: 6.0839, postalCodes: '52062, 52064, 52066, 52068, 52070, 52072, 52074, 52076, 52078' },
  { name: 'Saarbrücken', lat: 49.2402, lon: 6.9969, postalCodes: '66111, 66113, 66115, 66117, 66119, 66121, 66123, 66125' },
  { name: 'Kassel', lat: 51.3127, lon: 9.4797, postalCodes: '34117, 34119, 34121, 34123, 34125, 34127, 34128, 34130, 34131, 34132, 34134' },
  { name: 'Göttingen', lat: 51.5413, lon: 9.9158, postalCodes: '37073, 37075, 37077, 37079, 37081, 37083, 37085' },
  { name: 'Oldenburg', lat: 53.1435, lon: 8.2146, postalCodes: '26121, 26122, 26123, 26125, 26127, 26129, 26131, 26133, 26135' },
  { name: 'Osnabrück', lat: 52.2799, lon: 8.0472, postalCodes: '49074, 49076, 49078, 49080, 49082, 49084, 49086, 49088, 49090' },
  { name: 'Ulm', lat: 48.4011, lon: 9.9876, postalCodes: '89073, 89075, 89077, 89079, 89081' },
  { name: 'Jena', lat: 50.9271, lon: 11.5892, postalCodes: '07743, 07745, 07747, 07749' },
  {
    name: 'Halle (Saale)',
    aliases: ['Halle'],
    lat: 51.497,
    lon: 11.9688,
    postalCodes: '06108, 06110, 06112, 06114, 06116, 06118, 06120, 06122, 06124, 06126, 06128, 06130, 06132',
  },
  { name: 'Chemnitz', lat: 50.8278, lon: 12.9214, postalCodes: '09111, 09112, 09113, 09114, 09116, 09117, 09119, 09120, 09122, 09126, 09130, 09131' },
  { name: 'Schwerin', lat: 53.6355, lon: 11.4012, postalCodes: '19053, 19055, 19057, 19059, 19061, 19063' },
  { name: 'Trier', lat: 49.7499, lon: 6.6371, postalCodes: '54290, 54292, 54293, 54294, 54295, 54296' },
  { name: 'Koblenz', lat: 50.3569, lon: 7.589, postalCodes: '56068, 56070, 56072, 56073, 56075, 56076, 56077' },
  { name: 'Frankfurt (Oder)', aliases: ['Frankfurt/Oder'], lat: 52.3471, lon: 14.5506, postalCodes: '15230, 15232, 15234, 15236' },
  { name: 'Bamberg', lat: 49.8988, lon: 10.9028, postalCodes: '96047, 96049, 96050, 96052' },
  { name: 'Passau', lat: 48.5665, lon: 13.4312, postalCodes: '94032, 94034, 94036' },
  { name: 'Konstanz', lat: 47.6779, lon: 9.1732, postalCodes: '78462, 78464, 78465, 78467' },
  { name: 'Flensburg', lat: 54.7937, lon: 9.4469, postalCodes: '24937, 24939, 24941, 24943, 24944' },
  { name: 'Garmisch-Partenkirchen', lat: 47.4917, lon: 11.0955, postalCodes: '82467' },
];
