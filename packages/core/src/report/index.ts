export type { ReportPage, ReportDetails, ReportExample, FieldCorrections, CodeGroup } from './model.js';
export { renderReport, esc } from './render.js';
export { ReportCollector } from './collect.js';
export { writeReport } from './write.js';
