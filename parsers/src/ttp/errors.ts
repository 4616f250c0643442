/** Codes for template errors, so callers can classify without parsing messages. */
export const TtpErrorCode = {
  MacroNotSupported: 'TTP_MACRO_NOT_SUPPORTED',
  InvalidTemplate: 'TTP_INVALID_TEMPLATE',
  TemplateNotFound: 'TTP_TEMPLATE_NOT_FOUND',
  TemplatesDirNotConfigured: 'TTP_TEMPLATES_DIR_NOT_CONFIGURED',
  PathTraversal: 'TTP_PATH_TRAVERSAL',
} as const;
export type TtpErrorCode = (typeof TtpErrorCode)[keyof typeof TtpErrorCode];

/** A template could not be loaded: bad syntax, embedded Python, or a bad ttp:// reference. */
export class TtpTemplateError extends Error {
  override readonly name = 'TtpTemplateError';
  readonly code: TtpErrorCode;

  constructor(code: TtpErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
