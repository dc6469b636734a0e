import type { TownSeed } from './reference-towns-de.js';

/** Austrian towns of the sandbox's reference data (see reference-towns-de.ts for the format). */
export const AUSTRIAN_TOWNS: readonly TownSeed[] = [
  {
    name: 'Wien',
    lat: 48.2082,
    lon: 16.3738,
    postalCodes:
      '1010 Innere Stadt, 1020 Leopoldstadt, 1030 Landstraße, 1040 Wieden, 1050 Margareten, ' +
      '1060 Mariahilf, 1070 Neubau, 1080 Josefstadt, 1090 Alsergrund, 1100 Favoriten, 1120 Meidling, ' +
      '1130 Hietzing, 1140 Penzing, 1150 Rudolfsheim-Fünfhaus, 1160 Ottakring, 1170 Hernals, ' +
      '1180 Währing, 1190 Döbling, 1200 Brigittenau, 1210 Floridsdorf, 1220 Donaustadt, 1230 Liesing',
    streets: [
      'Kärntner Straße@1010',
      'Mariahilfer Straße@1060',
      'Graben@1010',
      'Praterstraße@1020',
      'Landstraßer Hauptstraße@1030',
      'Währinger Straße@1090',
      'Josefstädter Straße@1080',
      'Favoritenstraße@1100',
      'Wiedner Hauptstraße@1040',
      'Taborstraße@1020',
      'Alser Straße@1080',
      'Ottakringer Straße@1160',
      'Thaliastraße@1160',
      'Gumpendorfer Straße@1060',
      'Margaretenstraße@1050',
      'Meidlinger Hauptstraße@1120',
      'Hietzinger Hauptstraße@1130',
      'Wagramer Straße@1220',
      'Brünner Straße@1210',
      'Neubaugasse@1070',
    ],
  },
  {
    name: 'Graz',
    lat: 47.0707,
    lon: 15.4395,
    postalCodes: '8010, 8020, 8036, 8041, 8042, 8043, 8045, 8051, 8052, 8053, 8054, 8055',
    streets: ['Herrengasse', 'Annenstraße', 'Sporgasse', 'Leonhardstraße'],
  },
  { name: 'Linz', lat: 48.3069, lon: 14.2858, postalCodes: '4020, 4030, 4040', streets: ['Landstraße', 'Hauptplatz', 'Wiener Straße'] },
  { name: 'Salzburg', lat: 47.8095, lon: 13.055, postalCodes: '5020, 5023, 5026', streets: ['Getreidegasse', 'Linzer Gasse', 'Alpenstraße'] },
  { name: 'Innsbruck', lat: 47.2692, lon: 11.4041, postalCodes: '6020, 6080', streets: ['Maria-Theresien-Straße', 'Museumstraße', 'Anichstraße'] },
  {
    name: 'Klagenfurt am Wörthersee',
    abbreviation: 'Klagenfurt a. W.',
    aliases: ['Klagenfurt'],
    lat: 46.6247,
    lon: 14.3053,
    postalCodes: '9020',
    streets: ['Alter Platz'],
  },
  { name: 'Villach', lat: 46.6103, lon: 13.8558, postalCodes: '9500, 9504' },
  { name: 'Wels', lat: 48.1575, lon: 14.0289, postalCodes: '4600' },
  { name: 'St. Pölten', aliases: ['Sankt Pölten'], lat: 48.2047, lon: 15.6256, postalCodes: '3100' },
  { name: 'Dornbirn', lat: 47.4125, lon: 9.7417, postalCodes: '6850' },
  { name: 'Steyr', lat: 48.0427, lon: 14.4213, postalCodes: '4400' },
  { name: 'Bregenz', lat: 47.5031, lon: 9.7471, postalCodes: '6900' },
  { name: 'Wiener Neustadt', lat: 47.8151, lon: 16.2464, postalCodes: '2700' },
  { name: 'Leoben', lat: 47.3765, lon: 15.0914, postalCodes: '8700' },
  { name: 'Eisenstadt', lat: 47.8457, lon: 16.5233, postalCodes: '7000' },
];
