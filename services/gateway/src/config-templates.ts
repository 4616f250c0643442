import type { KV } from '@nats-io/kv';
import {
  decodeMessage,
  deviceTextMessage,
  encodeJson,
  forbiddenCharIn,
  encodeToken,
  isWrongRevision,
  ConfigTemplate,
  type ConfigTemplateRef,
  type ConfigTemplateSummary,
  type JobTemplate,
} from '@svc/proto';
import { TemplateProblem, renderConfig } from './config-render.js';
import { HttpError } from './http-errors.js';

/**
 * Configuration templates per context in `svc-templates` (key `<context>.<name>`, both encoded
 * as subject tokens, so a name's dots never shape the key). The bucket keeps the last
 * TEMPLATE_HISTORY versions of each; `version` counts the replacements of one template.
 */
export class ConfigTemplates {
  constructor(private readonly kv: KV) {}

  private static key(context: string, name: string): string {
    return `${encodeToken(context)}.${encodeToken(name)}`;
  }

  async get(context: string, name: string): Promise<ConfigTemplate | null> {
    const entry = await this.kv.get(ConfigTemplates.key(context, name));
    if (!entry || entry.operation !== 'PUT') return null;
    return decodeMessage(ConfigTemplate, entry.value);
  }

  /** Creates or replaces; `created` tells which. Concurrent writers never lose a version. */
  async put(
    context: string,
    name: string,
    text: string,
    description: string,
    by: string,
  ): Promise<{ template: ConfigTemplate; created: boolean }> {
    const key = ConfigTemplates.key(context, name);
    for (;;) {
      const entry = await this.kv.get(key);
      const live = entry !== null && entry.operation === 'PUT';
      const previous = live ? decodeMessage(ConfigTemplate, entry.value) : null;
      const template: ConfigTemplate = {
        name,
        context,
        template: text,
        description,
        version: (previous?.version ?? 0) + 1,
        updated_at: new Date().toISOString(),
        updated_by: by,
      };
      try {
        if (entry === null) await this.kv.create(key, encodeJson(template));
        else await this.kv.update(key, encodeJson(template), entry.revision);
        return { template, created: !live };
      } catch (err) {
        // Another writer got there first: read again and write over its version.
        if (!isWrongRevision(err)) throw err;
      }
    }
  }

  /** False when there was no such template. */
  async delete(context: string, name: string): Promise<boolean> {
    const key = ConfigTemplates.key(context, name);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return false;
    await this.kv.delete(key);
    return true;
  }

  async list(context: string): Promise<ConfigTemplateSummary[]> {
    const out: ConfigTemplateSummary[] = [];
    const keys = await this.kv.keys(`${encodeToken(context)}.>`);
    const names: string[] = [];
    for await (const k of keys) names.push(k);
    for (const k of names.sort()) {
      const entry = await this.kv.get(k);
      if (!entry || entry.operation !== 'PUT') continue;
      const t = decodeMessage(ConfigTemplate, entry.value);
      out.push({
        name: t.name,
        description: t.description,
        version: t.version,
        updated_at: t.updated_at,
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** Where a send-config's template came from, and the lines it rendered. */
export interface RenderedTemplate {
  lines: string[];
  template: JobTemplate;
}

/**
 * Renders a send-config `template` (stored by name in the job's context, or inline text) into
 * configuration lines. Throws a 422 HttpError naming the field: an unknown template, both or
 * neither of name and text, a syntax error, an undefined variable.
 */
export async function renderTemplateRef(
  store: ConfigTemplates,
  ref: ConfigTemplateRef,
  context: string,
  loc: (string | number)[],
): Promise<RenderedTemplate> {
  const vars = ref.vars ?? {};
  const issue = (field: string, msg: string, type = 'value_error') =>
    HttpError.validation([{ loc: [...loc, field], msg, type }]);
  if (ref.name !== undefined && ref.text !== undefined) {
    throw issue('text', 'give template.name or template.text, not both');
  }
  const at = {
    template: [...loc, ref.name !== undefined ? 'name' : 'text'],
    vars: [...loc, 'vars'],
  };
  let text: string;
  let template: JobTemplate;
  if (ref.name !== undefined) {
    const stored = await store.get(context, ref.name);
    if (stored === null) {
      throw issue(
        'name',
        `no template ${JSON.stringify(ref.name)} in context ${context}`,
        'not_found',
      );
    }
    text = stored.template;
    template = { name: stored.name, version: stored.version };
  } else if (ref.text !== undefined) {
    text = ref.text;
    template = { name: null, version: null };
  } else {
    throw issue('name', 'give template.name (a stored template) or template.text', 'missing');
  }
  let lines: string[];
  try {
    lines = renderConfig(text, vars, at);
  } catch (err) {
    if (err instanceof TemplateProblem) throw HttpError.validation(err.issues);
    throw err;
  }
  if (lines.length === 0) {
    throw issue(at.template.at(-1) as string, 'the template rendered no configuration line');
  }
  // The lines are typed on the device: the rules of `commands` hold for them too.
  for (const [n, line] of lines.entries()) {
    const found = forbiddenCharIn(line);
    if (found !== null) {
      throw issue(
        'vars',
        `rendered line ${n + 1}: ${deviceTextMessage(found)}`,
        'control_character',
      );
    }
  }
  return { lines, template };
}
