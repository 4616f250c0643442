import * as z from 'zod';

/**
 * The configuration workflow parts of the MCP tools (docs/config-workflows.md, docs/mcp.md):
 * template, dry-run and check arguments and the request body they make.
 */

export const templateArgsShape = {
  template_name: z
    .string()
    .min(1)
    .optional()
    .describe('A stored configuration template of the context (see list_config_templates).'),
  template_text: z
    .string()
    .min(1)
    .optional()
    .describe('Inline template text (Jinja2 syntax). Exclusive with template_name.'),
  vars: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Template variables; a variable the template uses and vars lacks is an error.'),
};

export const workflowArgsShape = {
  ...templateArgsShape,
  checks: z
    .array(z.string().min(1))
    .optional()
    .describe('Show commands run before and after the change; the result has their diffs.'),
  error_patterns: z
    .array(z.string().min(1))
    .optional()
    .describe('RE2 patterns: an output line matching one fails the configuration line.'),
};

export interface WorkflowArgs {
  commands?: string[] | undefined;
  template_name?: string | undefined;
  template_text?: string | undefined;
  vars?: Record<string, unknown> | undefined;
  checks?: string[] | undefined;
  error_patterns?: string[] | undefined;
}

/**
 * The send-config fields of the arguments: `commands`, or `template` from a name or text.
 * The service judges every rule (both, neither, unknown template) and answers 422 naming it.
 */
export function workflowBody(args: WorkflowArgs): Record<string, unknown> {
  const templated = args.template_name !== undefined || args.template_text !== undefined;
  return {
    ...(args.commands !== undefined ? { commands: args.commands } : {}),
    ...(templated
      ? {
          template: {
            ...(args.template_name !== undefined ? { name: args.template_name } : {}),
            ...(args.template_text !== undefined ? { text: args.template_text } : {}),
            vars: args.vars ?? {},
          },
        }
      : {}),
    ...(args.checks !== undefined ? { checks: args.checks } : {}),
    ...(args.error_patterns !== undefined ? { error_patterns: args.error_patterns } : {}),
  };
}
