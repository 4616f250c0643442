/** Public surface of @svc/parsers. */
export { ParserErrorCode, TemplateError, TextFsmError } from './errors.js';
export type { ErrorData, TemplateErrorOptions } from './errors.js';
export { TextFsm, parseTextFsm, splitLines } from './textfsm/engine.js';
export type { FieldValue, ListItem, TextFsmRecord } from './textfsm/engine.js';
export { compileTemplate } from './textfsm/template.js';
export type {
  CompiledTemplate,
  TemplateRule,
  TemplateValue,
  ValueOption,
} from './textfsm/template.js';
export { parseMerged, parseTemplateFiles, parseTextFsmLower } from './textfsm/cli-table.js';
export type { MergedTable } from './textfsm/cli-table.js';
export {
  clearTemplateIndexCache,
  findTemplates,
  loadTemplateIndex,
  matchIndexRow,
  parseIndexFile,
  parseWithIndex,
} from './textfsm/index-lookup.js';
export type { IndexAttributes, IndexRow, TemplateIndex } from './textfsm/index-lookup.js';
export { PythonRegex, PythonRegexError, translatePythonRegex } from './textfsm/python-regex.js';
export type { TranslatedRegex } from './textfsm/python-regex.js';
export { ParserPool } from './parser-pool.js';
export type { ParserPoolOptions } from './parser-pool.js';
export { executeParseRequest } from './parse-request.js';
export type {
  ParseRequest,
  TextFsmIndexRequest,
  TextFsmRequest,
  TtpRequest,
} from './parse-request.js';
export { parseTtp } from './ttp/mod.js';
