export { FORMULA_START, neutraliseCell, restoreCell, formatCell, formatCsvLine } from './cells.js';
export type { CellValue } from './cells.js';
export {
  REVIEW_COLUMNS,
  CANDIDATE_FIELDS,
  candidateColumns,
  candidateText,
  reviewColumnsAt,
  reviewHeader,
  reviewRow,
  rowCheck,
  rowCheckKey,
} from './layout.js';
export type { CandidateKind, CandidateField, ReviewRowCells } from './layout.js';
