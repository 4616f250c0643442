import type { Dict, Template } from './template.js';

/**
 * State shared by the parser and the match/group functions during one input,
 * standing in for TTP's module-level `_ttp_` dictionary.
 */
export interface RunContext {
  /** Template vars copied for this input; `record` writes here. */
  vars: Dict;
  /** Values recorded across inputs and templates of one parseTtp call. */
  globalVars: Dict;
  lookups: Dict;
  /** Every template of the call, for `lookup(template=...)`. */
  templates: Template[];
  template: Template;
  /** Results already built for this input, for `lookup(group=...)`. */
  mainResults: unknown;
}
