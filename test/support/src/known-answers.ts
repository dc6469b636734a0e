/**
 * Inputs whose answers are known, and those answers worked out without the project's engine: the
 * sandbox's labelled dirty-address generator gives the inputs (and, for classes A–D, the address
 * each one means), and a plain `fetch` of the sandbox's own HTTP API gives the answer the platform
 * makes for each single record. The connectors' end-to-end tests compare what the CLI wrote, record
 * by record, with these answers, so a field written into the wrong column or a result attached to
 * the wrong record fails.
 */
import { createCompanyService, generateDirtyInputs } from '@dq/sandbox';
import type { DirtyInput } from '@dq/sandbox';

/** An address request as a user's record holds it (all strings; a field left out is absent). */
export type AddressFields = Partial<Record<'street' | 'houseNumber' | 'addressLine' | 'postalCode' | 'locality' | 'localityLine' | 'country', string>>;

/** One candidate as the platform answers it (only the fields the tests compare). */
export interface KnownCandidate {
  street: string;
  houseNumber: string;
  postalCode: string;
  locality: string;
  subLocality?: string;
  country: string;
  addressType: string;
  houseNumberChoice?: { from: string; to: string; step: string }[];
}

/** The platform's answer for one address and the status the README's result policy gives it. */
export interface KnownAddressAnswer {
  resultClass: 'A' | 'B' | 'C' | 'D' | 'E' | 'F';
  status: 'accepted' | 'review' | 'invalid';
  candidates: KnownCandidate[];
}

/** The README's default result policy (A, B, C accepted; D, E review; F invalid), written out here. */
export const POLICY = { A: 'accepted', B: 'accepted', C: 'accepted', D: 'review', E: 'review', F: 'invalid' } as const;

/** One labelled input: the record's fields, the generator's label and the address it means. */
export interface LabelledAddress {
  fields: AddressFields;
  variant: string;
  intendedClass: DirtyInput['intendedClass'];
  truth?: DirtyInput['truth'];
}

/**
 * `n` labelled dirty addresses of the sandbox's generator (seed `seed`), keeping only the first of
 * inputs that differ in case or spacing alone (a connector asks once for those and shares the first
 * answer, class included, as the README says), with every value trimmed and none empty.
 */
export function labelledAddresses(n: number, seed = 5, country?: 'DE' | 'AT'): LabelledAddress[] {
  const seen = new Set<string>();
  const out: LabelledAddress[] = [];
  for (const item of generateDirtyInputs(n * 2, { seed, ...(country ? { country } : {}) })) {
    const fields: AddressFields = {};
    for (const [k, v] of Object.entries(item.input)) {
      const value = String(v).trim();
      if (value !== '') fields[k as keyof AddressFields] = value;
    }
    const key = JSON.stringify(
      Object.entries(fields)
        .sort()
        .map(([k, v]) => [k, v.toLowerCase().replace(/\s+/g, ' ')]),
    );
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ fields, variant: item.variant, intendedClass: item.intendedClass, ...(item.truth ? { truth: item.truth } : {}) });
    if (out.length === n) return out;
  }
  throw new Error(`only ${out.length} distinct labelled inputs; ask for fewer`);
}

/** The sandbox's answer for one address, asked directly over HTTP (`POST /location/v1/validate`). */
export async function askAddress(baseUrl: string, apiKey: string, fields: AddressFields): Promise<KnownAddressAnswer> {
  const res = await fetch(`${baseUrl}/location/v1/validate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(fields),
  });
  if (res.status !== 200) throw new Error(`validate answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { resultClass: KnownAddressAnswer['resultClass']; results: KnownCandidate[] };
  return { resultClass: body.resultClass, status: POLICY[body.resultClass], candidates: body.results };
}

/** Answers for many addresses, asked one by one (a few at a time). */
export async function askAddresses(baseUrl: string, apiKey: string, inputs: readonly AddressFields[]): Promise<KnownAddressAnswer[]> {
  const out: KnownAddressAnswer[] = new Array(inputs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < inputs.length) {
      const i = next++;
      out[i] = await askAddress(baseUrl, apiKey, inputs[i] as AddressFields);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

/** One company hit as the platform answers it. */
export interface KnownCompany {
  id: number;
  company: string;
  zip?: number;
  city?: string;
  street?: string;
  trCourt?: string;
  trType?: string;
  trNo?: number;
  trStatus?: string;
  searchScore: number;
}

/** The platform's hits for one company search and the status the README's company policy gives it. */
export interface KnownCompanyAnswer {
  status: 'accepted' | 'review' | 'invalid';
  hits: KnownCompany[];
}

/**
 * The README's company policy, written out here: no hit → invalid; one hit, or a best hit that alone
 * scores 100 or leads the next by at least 5 points → accepted; otherwise review.
 */
export function companyStatus(hits: readonly KnownCompany[]): KnownCompanyAnswer['status'] {
  const [best, next] = hits;
  if (best === undefined) return 'invalid';
  if (next === undefined) return 'accepted';
  return (best.searchScore === 100 && next.searchScore < 100) || best.searchScore - next.searchScore >= 5 ? 'accepted' : 'review';
}

/** The sandbox's answer for one company search, asked directly (`POST /companies/v2?searchMethod=company`). */
export async function askCompany(baseUrl: string, apiKey: string, body: Record<string, string>): Promise<KnownCompanyAnswer> {
  const res = await fetch(`${baseUrl}/companies/v2?searchMethod=company`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`companies answered ${res.status}: ${await res.text()}`);
  const hits = ((await res.json()) as { companies?: KnownCompany[] }).companies ?? [];
  return { status: companyStatus(hits), hits };
}

/**
 * Company searches with known answers from the sandbox's register (seed 1, the sandbox's default):
 * names with their zip as written in addresses (five digits; the first a Saxon 0xxxx; one clear hit), a name two active companies share asked without zip
 * (several hits, review), a name with a typo, and a name nobody has (no hit).
 */
export function companyInputs(n = 8): Record<string, string>[] {
  const register = createCompanyService({ seed: 1 }).companies.filter((c) => c.trStatus === 'active');
  const byName = new Map<string, typeof register>();
  for (const c of register) byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
  const shared = [...byName.values()].find((same) => same.length === 2)?.[0];
  if (shared === undefined) throw new Error('the register has no two active companies of one name');
  const all = [...byName.values()].filter((same) => same.length === 1).map((same) => same[0] as (typeof register)[number]);
  // One from Saxony first (postcode 0xxxx): a leading zero the answer must keep.
  const leadingZero = all.find((c) => c.zip < 10_000);
  if (leadingZero === undefined) throw new Error('the register has no company with a postcode below 10000');
  const unique = [leadingZero, ...all.filter((c) => c !== leadingZero)];
  const out: Record<string, string>[] = [];
  for (const c of unique.slice(0, n)) out.push({ company: c.company, zip: String(c.zip).padStart(5, '0'), city: c.city });
  out.push({ company: shared.company });
  const typo = unique[n] as (typeof register)[number];
  out.push({ company: `${typo.company.slice(0, 3)}${typo.company.slice(4)}`, zip: String(typo.zip).padStart(5, '0') });
  out.push({ company: 'Quantenverschränkung Zyxw Handelsgesellschaft' });
  return out;
}
