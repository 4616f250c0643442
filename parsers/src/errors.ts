/**
 * Errors of the parsers package. They cross the worker boundary as data
 * (`{ name, code, message, line }`) and are rebuilt with {@link errorFromData}.
 */

export const ParserErrorCode = {
  /** The template (or index file) is malformed or uses regex syntax that cannot be translated. */
  TemplateInvalid: 'TEMPLATE_INVALID',
  /** No index row matched the platform and command. */
  TemplateNotFound: 'TEMPLATE_NOT_FOUND',
  /** A parse exceeded its time budget; the worker running it was replaced. */
  Timeout: 'PARSE_TIMEOUT',
  /** A TextFSM `Error` action fired on the input. */
  StateError: 'STATE_ERROR',
  /** A worker died or the pool was closed while a parse was in flight. */
  WorkerFailed: 'WORKER_FAILED',
} as const;
export type ParserErrorCode = (typeof ParserErrorCode)[keyof typeof ParserErrorCode];

export interface TemplateErrorOptions extends ErrorOptions {
  code?: ParserErrorCode;
  /** 1-based line of the template (or index file) the error is about, when known. */
  line?: number;
}

/** A template cannot be used: bad syntax, untranslatable regex, no template, or a timeout. */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
  readonly code: ParserErrorCode;
  readonly line: number | undefined;

  constructor(message: string, options: TemplateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? ParserErrorCode.TemplateInvalid;
    this.line = options.line;
  }
}

/** Raised while parsing input, by a TextFSM `Error` action (Python's `TextFSMError`). */
export class TextFsmError extends Error {
  override readonly name = 'TextFsmError';
  readonly code = ParserErrorCode.StateError;
  /** Template line of the rule that raised the error. */
  readonly line: number;

  constructor(message: string, line: number) {
    super(message);
    this.line = line;
  }
}

/** Wire form of an error, as sent by parse workers. */
export interface ErrorData {
  name: string;
  code: string | undefined;
  message: string;
  line: number | undefined;
}

export function errorToData(err: unknown): ErrorData {
  if (err instanceof TemplateError || err instanceof TextFsmError) {
    return { name: err.name, code: err.code, message: err.message, line: err.line };
  }
  if (err instanceof Error)
    return { name: err.name, code: undefined, message: err.message, line: undefined };
  return { name: 'Error', code: undefined, message: String(err), line: undefined };
}

const knownCodes = new Set<string>(Object.values(ParserErrorCode));

export function errorFromData(data: ErrorData): Error {
  if (data.name === 'TextFsmError') return new TextFsmError(data.message, data.line ?? 0);
  if (data.name === 'TemplateError' && data.code !== undefined && knownCodes.has(data.code)) {
    return new TemplateError(data.message, { code: data.code as ParserErrorCode, line: data.line });
  }
  const err = new Error(data.message);
  err.name = data.name;
  return err;
}
