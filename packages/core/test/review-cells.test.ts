import { describe, expect, test } from 'vitest';
import {
  CANDIDATE_FIELDS,
  formatCell,
  formatCsvLine,
  neutraliseCell,
  restoreCell,
  reviewColumnsAt,
  reviewHeader,
  reviewRow,
  rowCheck,
  rowCheckKey,
} from '../src/review/index.js';

// Every character a spreadsheet acts on at the start of a cell, and the apostrophe that marks a neutralised one.
const TRIGGERS = ['=', '+', '-', '@', '\t', '\r', "'"];

describe('spreadsheet neutralising, one rule for every connector', () => {
  test('a value starting with = + - @ tab CR or an apostrophe gets one leading apostrophe, and restoring gives back every value exactly', () => {
    const values = [
      ...TRIGGERS.flatMap((c) => [c, `${c}1+2`, `${c}${c}x`, `${c}'`]),
      "''",
      '',
      'Hauptstraße 5',
      "O'Brien",
      ' =not at the start',
      '1-2',
      '\n=after a line break',
    ];
    for (const value of values) {
      const cell = neutraliseCell(value);
      expect(restoreCell(cell), JSON.stringify(value)).toBe(value);
      if (TRIGGERS.includes(value.charAt(0))) expect(cell, JSON.stringify(value)).toBe(`'${value}`);
      else expect(cell, JSON.stringify(value)).toBe(value);
      // What a spreadsheet sees first is never a character it would act on.
      expect(TRIGGERS.slice(0, -1)).not.toContain(cell.charAt(0));
    }
  });

  test('a --spreadsheet-safe CSV line neutralises text cells (numbers stay numbers) and quotes what needs quoting', () => {
    expect(formatCsvLine(['=1+2', "'quoted", -13.4, null, 'a;b', '@x "y"'], ';', true)).toBe(`'=1+2;''quoted;-13.4;;"a;b";"'@x ""y"""\n`);
    expect(formatCsvLine(['=1+2', "'quoted", -13.4, undefined], ',')).toBe("=1+2,'quoted,-13.4,\n");
    expect(formatCell('\rcr', ',', true)).toBe(`"'\rcr"`);
  });

  test('review rows carry every candidate field under its column, neutralised, with an empty decision', () => {
    const fields = CANDIDATE_FIELDS.address;
    const header = reviewHeader(['line', '-note'], 2, fields);
    expect(header.slice(0, 5)).toEqual(['line', "'-note", 'class', 'request_id', 'row_check']);
    const addressSuffixes = ['street', 'house_number', 'postal_code', 'locality', 'sub_locality', 'country', 'address_type', 'house_number_choice'];
    expect(header.slice(5, 13)).toEqual(addressSuffixes.map((suffix) => `candidate_1_${suffix}`));
    expect(header.slice(13, 21)).toEqual(addressSuffixes.map((suffix) => `candidate_2_${suffix}`));
    expect(header.at(-1)).toBe('decision');
    const candidate = {
      street: 'Hauptstraße',
      postalCode: '10115',
      locality: 'Berlin',
      country: 'DE',
      houseNumberChoice: [
        { from: '2', to: '10', step: 'even' },
        { from: '1', to: '9', step: 'odd' },
      ],
    };
    const check = rowCheck(['=SUM(A1)']);
    const row = reviewRow({ leading: ['7', '=SUM(A1)'], resultClass: 'E', requestId: 'r-1', rowCheck: check, candidates: [candidate] }, 2, fields);
    expect(row).toHaveLength(header.length);
    expect(row.slice(0, 5)).toEqual(['7', "'=SUM(A1)", 'E', 'r-1', check]);
    expect(row.slice(5, 13)).toEqual(['Hauptstraße', '', '10115', 'Berlin', '', 'DE', '', '2-10 even | 1-9 odd']);
    expect(row.slice(13)).toEqual(['', '', '', '', '', '', '', '', '']);
    const company = reviewRow(
      { leading: [], resultClass: null, requestId: 'r-2', rowCheck: check, candidates: [{ id: 42, company: '+Plus AG', searchScore: 97.5 }] },
      1,
      CANDIDATE_FIELDS.company,
    );
    expect(company).toEqual(['', 'r-2', check, '42', "'+Plus AG", '', '', '', '', '', '', '', '97.5', '']);
  });

  test('the row check tells values apart (NULL from empty too) and is text a spreadsheet keeps as written', () => {
    const checks = [rowCheck(['01067', 'Dresden']), rowCheck(['1067', 'Dresden']), rowCheck(['01067', 'Dresden', '']), rowCheck(['01067', 'Dresden', null])];
    expect(new Set(checks).size).toBe(4);
    expect(rowCheck(['01067', 'Dresden'])).toBe(checks[0]);
    for (const check of checks) expect(check).toMatch(/^v1:[A-Za-z0-9_-]{22}$/);
    // With the row's key (dq-pg), which comes back exactly, whatever the key column became.
    const keyed = rowCheck(['01067', 'Dresden'], '000123');
    expect(keyed.startsWith(`${checks[0]}:`)).toBe(true);
    expect(rowCheckKey(keyed)).toBe('000123');
    expect(rowCheckKey(rowCheck([], 'Müller; "7"'))).toBe('Müller; "7"');
    expect(rowCheckKey(checks[0]!)).toBeUndefined();
    expect(reviewColumnsAt(['line', 'x', 'class', 'request_id', 'row_check', 'candidate_1_street', 'decision', 'note'])).toEqual({
      class: 2,
      requestId: 3,
      rowCheck: 4,
      decision: 6,
    });
    // A file exported before the row check, and one whose fixed columns are not there.
    expect(reviewColumnsAt(['line', 'x', 'class', 'request_id', 'candidate_1_street', 'decision'])).toEqual({
      class: 2,
      requestId: 3,
      rowCheck: undefined,
      decision: 5,
    });
    expect(reviewColumnsAt(['line', 'x', 'request_id', 'decision'])).toBeUndefined();
  });
});
