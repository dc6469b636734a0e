/** What the run report page shows. Built by a connector from its run; rendered by {@link renderReport}. */

/** One example of a finding: where it is (row, line or key) and what it says. */
export interface ReportExample {
  /** Where: `line 12`, `id=4711`. */
  where: string;
  before?: string | null;
  after?: string | null;
  /** Free text (an error message, a suggestion). */
  text?: string;
  requestId?: string;
}

/** How many values of one field the run changed, with the first examples. */
export interface FieldCorrections {
  field: string;
  changed: number;
  examples: ReportExample[];
}

/** A group of failures or rejects sharing one code. */
export interface CodeGroup {
  code: string;
  count: number;
  /** Request ids of the calls that failed (first ones). */
  requestIds: string[];
  examples: ReportExample[];
}

/** The details a connector collected beside its summary. All optional: a section without data says so. */
export interface ReportDetails {
  /** Result classes (when the summary has no `byClass`). */
  byClass?: Record<string, number>;
  corrections?: { fields: FieldCorrections[]; rows: number; note?: string };
  review?: { count: number; byClass: Record<string, number>; command: string; examples: ReportExample[] };
  failures?: CodeGroup[];
  rejects?: CodeGroup[];
  conflicts?: { count: number; command: string; keys: string[] };
  /** Calls made per second over the run (the engine's run report), and the client-side limit. */
  rate?: { startSecond: number; bucketSeconds: number; counts: number[]; limit?: number };
  /** Why a section has less than the whole run (e.g. a resumed file). */
  notes?: string[];
}

export interface ReportPage {
  /** `dq-csv validate`, `dq-pg cleanse`. */
  tool: string;
  /** What was cleaned: a file or table name. */
  subject: string;
  /** Run id (dq-pg) or output path (dq-csv). */
  run?: string;
  generatedAt: string;
  /**
   * The run's JSON summary object, exactly as printed: every number on the page that the summary
   * has is rendered from it, with `data-metric="<path>"` and `data-value` so a test can compare.
   */
  summary: Record<string, unknown>;
  details: ReportDetails;
}
