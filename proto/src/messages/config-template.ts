import { Type, type Static } from 'typebox';

/**
 * Stored configuration templates (`svc-templates`, per context) and the template fields of
 * send-config (docs/config-workflows.md).
 */

/** Template names: lower-case letters, digits, `.`, `_`, `-`; at most 64 characters. */
export const TEMPLATE_NAME_PATTERN = '^[a-z0-9][a-z0-9._-]{0,63}$';
/** `POST /v2/config-templates/render` renders inline text: no stored template has this name. */
export const RESERVED_TEMPLATE_NAMES: readonly string[] = ['render'];
/** Longest template text, in characters (the byte limit, 64 KiB of UTF-8, is checked too). */
export const MAX_TEMPLATE_CHARS = 65_536;
/** Versions of a template the bucket keeps (NATS KV history). */
export const TEMPLATE_HISTORY = 16;

// Not job.ts's DateTime: job.ts imports this file (JobSpec.template).
const DateTime = () => Type.String({ format: 'date-time' });

const TemplateText = (description: string) =>
  Type.String({ minLength: 1, maxLength: MAX_TEMPLATE_CHARS, description });

const Vars = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'Variables of the template (any JSON). A variable the template uses and vars does not give is a 422 naming it.',
});

export const ConfigTemplatePut = Type.Object(
  {
    template: TemplateText(
      'Jinja2 syntax (Nunjucks): loops, conditionals, filters, {% set %}; no include, import or extends. At most 64 KiB.',
    ),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  {
    $id: 'ConfigTemplatePut',
    description: 'PUT /v2/config-templates/{name}',
    additionalProperties: false,
  },
);
export type ConfigTemplatePut = Static<typeof ConfigTemplatePut>;

export const ConfigTemplateSaved = Type.Object(
  {
    name: Type.String(),
    version: Type.Integer({ minimum: 1, description: '1 when created, +1 at each replacement' }),
    updated_at: DateTime(),
  },
  { $id: 'ConfigTemplateSaved' },
);
export type ConfigTemplateSaved = Static<typeof ConfigTemplateSaved>;

export const ConfigTemplateSummary = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    version: Type.Integer({ minimum: 1 }),
    updated_at: DateTime(),
  },
  { $id: 'ConfigTemplateSummary' },
);
export type ConfigTemplateSummary = Static<typeof ConfigTemplateSummary>;

export const ConfigTemplate = Type.Object(
  {
    name: Type.String(),
    context: Type.String(),
    template: Type.String(),
    description: Type.String(),
    version: Type.Integer({ minimum: 1 }),
    updated_at: DateTime(),
    updated_by: Type.String({ description: 'caller identity that wrote this version' }),
  },
  { $id: 'ConfigTemplate' },
);
export type ConfigTemplate = Static<typeof ConfigTemplate>;

export const ConfigTemplateList = Type.Object(
  { templates: Type.Array(ConfigTemplateSummary) },
  { $id: 'ConfigTemplateList' },
);
export type ConfigTemplateList = Static<typeof ConfigTemplateList>;

export const RenderStoredRequest = Type.Object(
  { vars: Type.Optional(Vars) },
  {
    $id: 'RenderStoredRequest',
    description: 'POST /v2/config-templates/{name}/render',
    additionalProperties: false,
  },
);
export type RenderStoredRequest = Static<typeof RenderStoredRequest>;

export const RenderInlineRequest = Type.Object(
  {
    template: TemplateText('Template text, Jinja2 syntax (Nunjucks).'),
    vars: Type.Optional(Vars),
  },
  {
    $id: 'RenderInlineRequest',
    description: 'POST /v2/config-templates/render',
    additionalProperties: false,
  },
);
export type RenderInlineRequest = Static<typeof RenderInlineRequest>;

export const RenderedConfig = Type.Object(
  {
    lines: Type.Array(Type.String(), {
      description: 'The configuration lines, blank lines dropped, trailing spaces removed.',
    }),
  },
  { $id: 'RenderedConfig' },
);
export type RenderedConfig = Static<typeof RenderedConfig>;

/** send-config `template`: a stored template by name, or inline text, and its vars. */
export const ConfigTemplateRef = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        pattern: TEMPLATE_NAME_PATTERN,
        description: 'A stored template of the job context. Exclusive with text.',
      }),
    ),
    text: Type.Optional(TemplateText('Inline template text. Exclusive with name.')),
    vars: Type.Optional(Vars),
  },
  {
    additionalProperties: false,
    description:
      'Render the configuration lines from a template instead of giving commands (exclusive with commands).',
  },
);
export type ConfigTemplateRef = Static<typeof ConfigTemplateRef>;

/** What a job record keeps of the template its lines came from (never the vars: secrets). */
export const JobTemplate = Type.Object(
  {
    name: Type.Union([Type.String(), Type.Null()]),
    version: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false },
);
export type JobTemplate = Static<typeof JobTemplate>;
