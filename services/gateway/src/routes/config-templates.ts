import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  Buckets,
  ConfigTemplate,
  ConfigTemplateList,
  ConfigTemplatePut,
  ConfigTemplateSaved,
  RESERVED_TEMPLATE_NAMES,
  RenderInlineRequest,
  RenderStoredRequest,
  RenderedConfig,
  TEMPLATE_NAME_PATTERN,
  type RenderInlineRequest as RenderInline,
  type RenderStoredRequest as RenderStored,
  type ConfigTemplatePut as Put,
} from '@svc/proto';
import { AuditEvent } from '@svc/telemetry';
import { attemptOf } from '../authenticate.js';
import { hasRole, mayUseContext, type Caller } from '../caller.js';
import { TemplateProblem, renderConfig, templateProblems } from '../config-render.js';
import { ConfigTemplates } from '../config-templates.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { validInput } from '../request-input.js';
import { guarded } from './context.js';
import { ref, routeSchema, type RouteDoc } from './route-schemas.js';

type NameParams = { Params: { name: string }; Querystring: { context?: string } };
type ContextQuery = { Querystring: { context?: string } };

const NameParam = {
  name: Type.String({
    pattern: TEMPLATE_NAME_PATTERN,
    description: `Template name: ${TEMPLATE_NAME_PATTERN}; "render" is reserved.`,
  }),
};
const ContextQuerySchema = Type.Object({
  context: Type.Optional(
    Type.String({ description: 'Routing context of the template. Default "default".' }),
  ),
});

const doc = (d: Omit<RouteDoc, 'tags' | 'access'>) => ({
  schema: routeSchema({
    ...d,
    tags: ['config-templates'],
    access: 'caller',
    querystring: ContextQuerySchema,
  }),
});

const TEMPLATE_EXAMPLE = {
  template:
    'hostname {{ hostname }}\n{% for vlan in vlans %}vlan {{ vlan.id }}\n name {{ vlan.name }}\n{% endfor %}',
  description: 'access switch baseline',
};

/**
 * Stored configuration templates (`svc-templates`, per context) and rendering without a device:
 * any caller of a context reads and renders its templates; writing needs operator or admin.
 */
export function registerConfigTemplateRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { config, onStoreError, authenticate, audit } = ctx;
  const store = new ConfigTemplates(ctx.stores[Buckets.templates]);

  /** The context of the request (query `context`), checked against the caller's key. */
  const contextOf = (caller: Caller, req: FastifyRequest<ContextQuery>): string => {
    const context = req.query.context ?? 'default';
    if (!config.SVC_CONTEXTS.includes(context)) {
      throw HttpError.validation([
        {
          loc: ['query', 'context'],
          msg: `unknown context ${JSON.stringify(context)}; valid: ${config.SVC_CONTEXTS.join(', ')}`,
          type: 'value_error',
        },
      ]);
    }
    if (!mayUseContext(caller, context)) {
      throw new HttpError(403, `this key may not use context ${context}`);
    }
    return context;
  };
  const nameOf = (req: FastifyRequest<NameParams>): string => {
    if (RESERVED_TEMPLATE_NAMES.includes(req.params.name)) {
      throw HttpError.validation([
        {
          loc: ['path', 'name'],
          msg: `${JSON.stringify(req.params.name)} is reserved (POST /v2/config-templates/render renders inline text)`,
          type: 'string_pattern_mismatch',
        },
      ]);
    }
    return validInput<NameParams['Params']>(req, 'params').name;
  };
  const auditBase = (req: FastifyRequest, caller: Caller, status: string) => ({
    request_id: attemptOf(req, null).requestId,
    username: '',
    caller: caller.id,
    source_ip: req.ip,
    device_ip: '',
    platform: '',
    status,
    duration_ms: 0,
  });
  const mustWrite = (caller: Caller) => {
    if (!hasRole(caller, 'operator')) {
      throw new HttpError(403, `role ${caller.role} may not write configuration templates`);
    }
  };
  const rendered = (text: string, vars: Record<string, unknown>, template: (string | number)[]) => {
    try {
      return { lines: renderConfig(text, vars, { template, vars: ['body', 'vars'] }) };
    } catch (err) {
      if (err instanceof TemplateProblem) throw HttpError.validation(err.issues);
      throw err;
    }
  };

  app.get<ContextQuery>(
    '/v2/config-templates',
    doc({
      operationId: 'listConfigTemplates',
      summary: 'Configuration templates of a context',
      ok: {
        200: {
          description: 'Name, description, version, updated_at of each.',
          body: ref(ConfigTemplateList),
        },
      },
      errors: [403, 422],
    }),
    guarded<FastifyRequest<ContextQuery>>(async (req, reply) => {
      const caller = await authenticate(req);
      const templates = await store.list(contextOf(caller, req));
      return reply.code(200).send({ templates });
    }, onStoreError),
  );

  // Declared before /:name routes; "render" is a reserved name, so the two never meet.
  app.post<ContextQuery>(
    '/v2/config-templates/render',
    doc({
      operationId: 'renderInlineConfigTemplate',
      summary: 'Render template text with vars into configuration lines (no device contact)',
      body: ref(RenderInlineRequest),
      bodyExample: { template: 'hostname {{ hostname }}', vars: { hostname: 'R1' } },
      ok: { 200: { description: 'The lines, blank lines dropped.', body: ref(RenderedConfig) } },
      errors: [403, 422],
    }),
    guarded<FastifyRequest<ContextQuery>>(async (req, reply) => {
      const caller = await authenticate(req);
      contextOf(caller, req);
      const body = validInput<RenderInline>(req, 'body');
      return reply.code(200).send(rendered(body.template, body.vars ?? {}, ['body', 'template']));
    }, onStoreError),
  );

  app.get<NameParams>(
    '/v2/config-templates/:name',
    doc({
      operationId: 'getConfigTemplate',
      summary: 'A configuration template',
      params: NameParam,
      ok: { 200: { description: 'The template and its version.', body: ref(ConfigTemplate) } },
      errors: [403, 404, 422],
    }),
    guarded<FastifyRequest<NameParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const context = contextOf(caller, req);
      const name = nameOf(req);
      const t = await store.get(context, name);
      if (!t) throw new HttpError(404, `no template ${name} in context ${context}`);
      return reply.code(200).send(t);
    }, onStoreError),
  );

  app.put<NameParams>(
    '/v2/config-templates/:name',
    doc({
      operationId: 'putConfigTemplate',
      summary: 'Create or replace a configuration template (operator or admin)',
      params: NameParam,
      body: ref(ConfigTemplatePut),
      bodyExample: TEMPLATE_EXAMPLE,
      ok: {
        200: { description: 'Replaced: the new version.', body: ref(ConfigTemplateSaved) },
        201: { description: 'Created: version 1.', body: ref(ConfigTemplateSaved) },
      },
      errors: [403, 422],
    }),
    guarded<FastifyRequest<NameParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      mustWrite(caller);
      const context = contextOf(caller, req);
      const name = nameOf(req);
      const body = validInput<Put>(req, 'body');
      const problems = templateProblems(body.template, {
        template: ['body', 'template'],
        vars: ['body', 'vars'],
      });
      if (problems.length > 0) throw HttpError.validation(problems);
      const { template, created } = await store.put(
        context,
        name,
        body.template,
        body.description ?? '',
        caller.id,
      );
      audit.emit(AuditEvent.configTemplateSaved, {
        ...auditBase(req, caller, created ? 'created' : 'replaced'),
        context,
        template: name,
        version: template.version,
      });
      return reply
        .code(created ? 201 : 200)
        .send({ name, version: template.version, updated_at: template.updated_at });
    }, onStoreError),
  );

  app.delete<NameParams>(
    '/v2/config-templates/:name',
    doc({
      operationId: 'deleteConfigTemplate',
      summary: 'Delete a configuration template (operator or admin)',
      params: NameParam,
      ok: { 204: { description: 'Deleted.' } },
      errors: [403, 404, 422],
    }),
    guarded<FastifyRequest<NameParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      mustWrite(caller);
      const context = contextOf(caller, req);
      const name = nameOf(req);
      if (!(await store.delete(context, name))) {
        throw new HttpError(404, `no template ${name} in context ${context}`);
      }
      audit.emit(AuditEvent.configTemplateDeleted, {
        ...auditBase(req, caller, 'deleted'),
        context,
        template: name,
      });
      return reply.code(204).send();
    }, onStoreError),
  );

  app.post<NameParams>(
    '/v2/config-templates/:name/render',
    doc({
      operationId: 'renderConfigTemplate',
      summary: 'Render a stored template with vars into configuration lines (no device contact)',
      params: NameParam,
      body: ref(RenderStoredRequest),
      bodyExample: { vars: { hostname: 'R1', vlans: [{ id: 10, name: 'users' }] } },
      ok: { 200: { description: 'The lines, blank lines dropped.', body: ref(RenderedConfig) } },
      errors: [403, 404, 422],
    }),
    guarded<FastifyRequest<NameParams>>(async (req, reply) => {
      const caller = await authenticate(req);
      const context = contextOf(caller, req);
      const name = nameOf(req);
      const body = validInput<RenderStored>(req, 'body');
      const t = await store.get(context, name);
      if (!t) throw new HttpError(404, `no template ${name} in context ${context}`);
      return reply.code(200).send(rendered(t.template, body.vars ?? {}, ['path', 'name']));
    }, onStoreError),
  );
}
