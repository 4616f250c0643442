// Public entry of the TTP (Template Text Parser) engine.
import { readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { runTemplates } from './engine.js';
import { TtpErrorCode, TtpTemplateError } from './errors.js';
import { Template } from './template.js';

export { TtpTemplateError, TtpErrorCode } from './errors.js';

export interface TtpOptions {
  /** Directory that `ttp://path` references resolve under. No default: references fail without it. */
  templatesDir?: string;
  /**
   * The name under which the caller configures `templatesDir` (a service setting), named in
   * the error when a ttp:// reference meets no directory.
   */
  templatesDirSetting?: string;
}

const TTP_SCHEME = 'ttp://';
const MAX_EXTEND_DEPTH = 8;

/** Reads `ttp://relative/path` from the templates directory, refusing paths that escape it. */
function loadTtpReference(ref: string, options: TtpOptions): string {
  const dir = options.templatesDir;
  if (!dir) {
    throw new TtpTemplateError(
      TtpErrorCode.TemplatesDirNotConfigured,
      `cannot load '${ref}': no templates directory is configured (set ${options.templatesDirSetting ?? 'options.templatesDir'})`,
    );
  }
  const rel = ref.startsWith(TTP_SCHEME) ? ref.slice(TTP_SCHEME.length) : ref;
  const root = resolve(dir);
  const target = resolve(root, rel);
  if (rel === '' || isAbsolute(rel) || !isInside(root, target)) {
    throw new TtpTemplateError(
      TtpErrorCode.PathTraversal,
      `template path '${ref}' is outside the templates directory`,
    );
  }
  let real: string;
  try {
    real = realpathSync(target);
  } catch (err) {
    throw new TtpTemplateError(TtpErrorCode.TemplateNotFound, `template '${ref}' not found`, {
      cause: err,
    });
  }
  // a symlink inside the directory must not lead outside it either
  if (!isInside(realpathSync(root), real)) {
    throw new TtpTemplateError(
      TtpErrorCode.PathTraversal,
      `template path '${ref}' is outside the templates directory`,
    );
  }
  return readFileSync(real, 'utf8');
}

function isInside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/** Inlines `<extend template="ttp://..."/>` tags with the referenced template text. */
function expandExtends(text: string, options: TtpOptions, depth = 0): string {
  return text.replace(
    /<extend\b([^>]*?)\/>|<extend\b([^>]*?)>[\s\S]*?<\/extend>/g,
    (_m, a1?: string, a2?: string) => {
      const attrs = a1 ?? a2 ?? '';
      const ref = /\btemplate\s*=\s*(["'])(.*?)\1/.exec(attrs)?.[2];
      if (!ref)
        throw new TtpTemplateError(
          TtpErrorCode.InvalidTemplate,
          '<extend> tag without a template attribute',
        );
      if (depth >= MAX_EXTEND_DEPTH) {
        throw new TtpTemplateError(
          TtpErrorCode.InvalidTemplate,
          `<extend> nested deeper than ${MAX_EXTEND_DEPTH} levels`,
        );
      }
      return expandExtends(loadTtpReference(ref, options), options, depth + 1);
    },
  );
}

function rejectMacros(text: string): void {
  if (/<macro\b/i.test(text)) {
    throw new TtpTemplateError(
      TtpErrorCode.MacroNotSupported,
      'macro is not supported: templates may not embed Python',
    );
  }
}

/**
 * Parses `input` with a TTP template and returns what TTP's default
 * `parser.result()` returns: one entry per template, each a list with one
 * entry per input. `template` may be template text or a `ttp://path` reference.
 */
export function parseTtp(template: string, input: string, options: TtpOptions = {}): unknown {
  let text = template.startsWith(TTP_SCHEME)
    ? loadTtpReference(template.trim(), options)
    : template;
  rejectMacros(text);
  text = expandExtends(text, options);
  rejectMacros(text);
  const root = new Template(text, '_root_template_');
  const templates = root.templates.length > 0 ? root.templates : [root];
  const hasOwnData = templates.some((t) => [...t.inputs.values()].some((i) => i.data.length > 0));
  if (input.trim() !== '' || !hasOwnData) {
    for (const t of templates) t.addInput('Default_Input', [input]);
  }
  const results = runTemplates(templates);
  // ip objects and other helpers serialise to plain JSON values, as TTP's results do
  return JSON.parse(JSON.stringify(results)) as unknown;
}
