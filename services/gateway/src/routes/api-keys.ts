import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { check } from '@svc/proto';
import type { ApiKeys } from '../api-keys.js';
import { Role, parseBasic, parseBearer } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { parseJsonBody } from '../job-intake.js';
import { guarded } from './context.js';

/** Longest ttl accepted: 100 years (keeps every expiry a valid date). */
const MAX_TTL = 3_153_600_000;

const CreateKeyRequest = Type.Object(
  {
    role: Type.Optional(Type.Enum([Role.admin, Role.operator, Role.viewer])),
    contexts: Type.Optional(
      Type.Array(Type.String({ pattern: '^(\\*|[A-Za-z0-9_-]+)$' }), {
        minItems: 1,
        maxItems: 100,
      }),
    ),
    ttl: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TTL })),
    created_by: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { $id: 'CreateApiKeyRequest', additionalProperties: false },
);
type CreateKeyRequest = Static<typeof CreateKeyRequest>;

type KeyParams = { Params: { key_id: string } };

/**
 * Key management: Basic `admin:<SVC_ADMIN_SECRET>` or a Bearer key of role admin. When the
 * secret is unset and no admin key exists, every key route answers 403 (disabled).
 */
export function registerApiKeyRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  keys: ApiKeys,
): void {
  const { config, onStoreError } = ctx;

  const authorize = async (req: FastifyRequest): Promise<string> => {
    if (!keys.enabled) throw new HttpError(403, 'API keys are disabled: no signing secret');
    if (!config.SVC_ADMIN_SECRET && !keys.hasAdminKey()) {
      throw new HttpError(
        403,
        'key management is disabled: SVC_ADMIN_SECRET is unset and no admin key exists',
      );
    }
    const header = req.headers.authorization;
    const basic = parseBasic(header);
    if (basic) {
      if (keys.isAdminSecret(basic.username, basic.password)) return 'admin';
      throw new HttpError(401, 'invalid admin credentials', {
        'WWW-Authenticate': 'Basic realm="svc"',
      });
    }
    const token = parseBearer(header);
    if (token) {
      const caller = await keys.resolve(token);
      if (!caller) {
        throw new HttpError(401, 'invalid, expired or revoked API key', {
          'WWW-Authenticate': 'Bearer',
        });
      }
      if (caller.role !== Role.admin)
        throw new HttpError(403, `role ${caller.role} may not manage keys`);
      return caller.id;
    }
    throw new HttpError(401, 'authentication required (Basic admin or an admin API key)', {
      'WWW-Authenticate': 'Basic realm="svc", Bearer',
    });
  };

  app.post(
    '/v2/api-keys',
    guarded(async (req, reply) => {
      const actor = await authorize(req);
      const raw = req.body as string | undefined;
      const parsed = raw === undefined || raw.trim() === '' ? {} : parseJsonBody(raw);
      const checked = check<CreateKeyRequest>(CreateKeyRequest, parsed, 'body');
      if (!checked.ok) throw HttpError.validation(checked.issues);
      const body = checked.value;
      const contexts = [...new Set(body.contexts ?? ['*'])];
      const unknown = contexts.filter((c) => c !== '*' && !config.SVC_CONTEXTS.includes(c));
      if (unknown.length > 0) {
        throw HttpError.validation([
          {
            loc: ['body', 'contexts'],
            msg: `unknown context(s) ${unknown.join(', ')}; valid: ${config.SVC_CONTEXTS.join(', ')}`,
            type: 'value_error',
          },
        ]);
      }
      const created = await keys.create({
        role: body.role ?? Role.admin,
        contexts,
        ttl: body.ttl ?? config.API_KEY_DEFAULT_TTL,
        createdBy: body.created_by ?? (actor === 'admin' ? 'system' : actor),
      });
      return reply.code(201).header('Cache-Control', 'no-store').send(created);
    }, onStoreError),
  );

  app.get(
    '/v2/api-keys',
    guarded(async (req, reply) => {
      await authorize(req);
      return reply.code(200).send({ keys: await keys.list() });
    }, onStoreError),
  );

  app.delete<KeyParams>(
    '/v2/api-keys/:key_id',
    guarded<FastifyRequest<KeyParams>>(async (req, reply) => {
      await authorize(req);
      if (!(await keys.revoke(req.params.key_id))) {
        throw new HttpError(404, `api key ${req.params.key_id} not found`);
      }
      return reply.code(204).send();
    }, onStoreError),
  );

  app.post<KeyParams>(
    '/v2/api-keys/:key_id/rotate',
    guarded<FastifyRequest<KeyParams>>(async (req, reply) => {
      await authorize(req);
      const rotated = await keys.rotate(req.params.key_id);
      if (rotated === null) throw new HttpError(404, `api key ${req.params.key_id} not found`);
      if (rotated === 'expired') {
        throw new HttpError(409, `api key ${req.params.key_id} has expired; create a new key`);
      }
      return reply.code(200).header('Cache-Control', 'no-store').send(rotated);
    }, onStoreError),
  );
}
