import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import {
  BatchCreated,
  BatchRequest,
  BatchSummary,
  EnqueueResponse,
  HealthRecord,
  JobResult,
  MessageBody,
  SendCommandRequest,
  SendCommandStructuredRequest,
  SendConfigRequest,
  Transcript,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  ValidationErrorBody,
} from '@svc/proto';
import { BODY_OPTIONAL, ISSUE, routeSchema } from './route-schemas.js';

/** Where the document is served (no authentication). */
export const OPENAPI_PATH = '/v2/openapi.json';

/**
 * The schemas the routes name by `$ref`; with every schema nested in them that has an `$id`,
 * they become `components/schemas` of the document under their `$id`.
 */
const NAMED: TSchema[] = [
  SendCommandRequest,
  SendConfigRequest,
  SendCommandStructuredRequest,
  V1SendCommandRequest,
  V1SendCommandStructuredRequest,
  EnqueueResponse,
  BatchRequest,
  BatchCreated,
  BatchSummary,
  JobResult,
  Transcript,
  HealthRecord,
  MessageBody,
  ValidationErrorBody,
];

/**
 * Splits schemas into one per `$id`, each nested `$id` schema replaced by a `$ref` to it, so
 * each is registered once (`addSchema`) and named once in the document.
 */
export function namedSchemas(roots: readonly TSchema[]): Record<string, unknown>[] {
  const found = new Map<string, Record<string, unknown>>();
  const walk = (node: unknown, top: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, false));
    if (node === null || typeof node !== 'object') return node;
    const obj = node as Record<string, unknown>;
    const id = obj['$id'];
    if (!top && typeof id === 'string') {
      if (!found.has(id)) walk(obj, true);
      return { $ref: `${id}#` };
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) out[k] = walk(v, false);
    if (typeof id === 'string') found.set(id, out);
    return out;
  };
  for (const r of roots) walk(r, true);
  return [...found.values()];
}

/**
 * Registers @fastify/swagger before any route: it records every route added afterwards, and
 * `app.swagger()` builds the document from their schemas. Extra named schemas (a route
 * module's own request or answer types) are passed in `more`.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  version: string,
  more: readonly TSchema[] = [],
): Promise<void> {
  for (const s of namedSchemas([...NAMED, ...more])) app.addSchema(s);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc: network device command service',
        version,
        description:
          'Asynchronous HTTPS API in front of SSH-reachable network devices: a submission is answered at once with 202 and a job id (Location: the job); the job runs on an actor host and is read by polling, an SSE stream or a webhook. Every answer carries X-Request-ID; every /v1 answer carries Deprecation and Sunset.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: '/', description: 'The gateway serving this document.' }],
      security: [{ basic: [] }, { bearer: [] }],
      tags: [
        { name: 'jobs', description: 'Submit, read, cancel, replay and list jobs.' },
        { name: 'streams', description: 'Server-Sent Events of jobs and batches.' },
        { name: 'batches', description: 'One job per device, with rollout control.' },
        { name: 'api-keys', description: 'Bearer API keys (admins only).' },
        { name: 'host-keys', description: 'Pinned SSH host keys of devices (admins only).' },
        {
          name: 'config-templates',
          description: 'Configuration templates per context (Jinja2 syntax) and rendering.',
        },
        { name: 'operations', description: 'Health, metrics and this document.' },
        { name: 'v1', description: 'Deprecated routes kept for old clients.' },
      ],
      components: {
        securitySchemes: {
          basic: {
            type: 'http',
            scheme: 'basic',
            description: 'The device credentials (or admin:SVC_ADMIN_SECRET on admin routes).',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'An API key from POST /v2/api-keys.',
          },
        },
      },
    },
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
      // A copy: the route schemas may share objects with it, and Ajv reads their wording.
      const openapiObject = JSON.parse(JSON.stringify(documentObject.openapiObject)) as Partial<
        typeof documentObject.openapiObject
      >;
      dropIssueWording(openapiObject);
      for (const item of Object.values(openapiObject.paths ?? {}))
        for (const op of Object.values(item as Record<string, Record<string, unknown>>)) {
          if (op === null || typeof op !== 'object' || !(BODY_OPTIONAL in op)) continue;
          delete op[BODY_OPTIONAL];
          const body = op['requestBody'] as { required?: boolean } | undefined;
          if (body) body.required = false;
        }
      return openapiObject;
    },
    refResolver: {
      // Components keep their `$id` as name (the default numbers them def-0, def-1, ...).
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json['$id'] === 'string' ? json['$id'] : `def-${i}`,
    },
  });
}

/** Drops the 422 wording of schemas (route-schemas.ts `ISSUE`): the gateway's, not the API's. */
function dropIssueWording(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const n of node) dropIssueWording(n);
    return;
  }
  const obj = node as Record<string, unknown>;
  delete obj[ISSUE];
  for (const v of Object.values(obj)) dropIssueWording(v);
}

/** GET /v2/openapi.json: the document generated from the routes' schemas. */
export function registerOpenApiRoute(app: FastifyInstance): void {
  app.get(
    OPENAPI_PATH,
    {
      schema: routeSchema({
        operationId: 'getOpenApi',
        summary: 'This document (no authentication)',
        tags: ['operations'],
        access: 'none',
        ok: {
          200: {
            description: 'The OpenAPI 3.1 document, generated from the route schemas.',
            body: { type: 'object', additionalProperties: true },
          },
        },
      }),
    },
    (_req, reply) => reply.code(200).send(app.swagger()),
  );
}

/** Where the API explorer (Swagger UI of the generated document) is served. */
export const EXPLORER_PATH = '/docs';

/**
 * GET /docs: Swagger UI of the generated document, for a person with a browser. Static pages
 * and the document only, with no authentication, like /v2/openapi.json; the API routes keep
 * theirs (the "Authorize" button sends Basic or Bearer to them as any client does). Its routes
 * are hidden from the document.
 */
export async function registerApiExplorer(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: EXPLORER_PATH,
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
  });
}
