import { describe, expect, it } from 'vitest';
import { mapRecord, requestKey } from '../src/engine/record-mapping.js';

const key = (record: Record<string, string>, scope = 's'): string => requestKey(scope, mapRecord('address', record));

describe('request keys (dedup and cache)', () => {
  it('are equal for inputs that differ only in blanks around values or field order, and differ for anything the platform reads differently', () => {
    const a = key({ street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' });
    expect(key({ country: 'DE', locality: 'Berlin ', postalCode: ' 10115', houseNumber: '1 ', street: '\tHauptstraße' })).toBe(a);
    // Case, inner spacing, Unicode form and invisible characters: the platform may answer each differently.
    for (const street of ['hauptstraße', 'HAUPTSTRASSE', 'Haupt straße', 'Haupt\u00adstraße', 'Hauptstrasse']) {
      expect(key({ street, houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }), street).not.toBe(a);
    }
    expect(key({ street: 'Mu\u0308llerstraße', postalCode: '10117', locality: 'Berlin', country: 'DE' })).not.toBe(
      key({ street: 'Müllerstraße', postalCode: '10117', locality: 'Berlin', country: 'DE' }),
    );
    expect(key({ street: 'Unter  den\tLinden', postalCode: '10117', locality: 'Berlin', country: 'DE' })).not.toBe(
      key({ street: 'Unter den Linden', postalCode: '10117', locality: 'Berlin', country: 'DE' }),
    );
  });

  it('differ when a value holds what separates the parts, and between scopes', () => {
    const plain = key({ street: 'A', houseNumber: '1', postalCode: '1', locality: 'B', country: 'DE' });
    // A value that spells out the next part must not collide with that part being present.
    expect(key({ street: 'A\u0001houseNumber=1', postalCode: '1', locality: 'B', country: 'DE' })).not.toBe(plain);
    expect(key({ street: 'A\\', houseNumber: '1', postalCode: '1', locality: 'B', country: 'DE' })).not.toBe(
      key({ street: 'A', houseNumber: '\\1', postalCode: '1', locality: 'B', country: 'DE' }),
    );
    expect(key({ street: 'A', postalCode: '1', locality: 'B', country: 'DE' }, 'other')).not.toBe(
      key({ street: 'A', postalCode: '1', locality: 'B', country: 'DE' }, 's'),
    );
  });
});
