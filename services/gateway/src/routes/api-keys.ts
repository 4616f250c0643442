import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { DateTime } from '@svc/proto';
import { AuditEvent } from '@svc/telemetry';
import type { ApiKeyMeta, ApiKeys } from '../api-keys.js';
import { attemptOf } from '../authenticate.js';
import { Role, hasRole, mayUseContext, parseBasic, parseBearer, type Caller } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { noteCaller } from '../http-server.js';
import { validInput } from '../request-input.js';
import { guarded } from './context.js';
import { ref, routeSchema, type RouteDoc } from './route-schemas.js';

/** Longest ttl accepted: 100 years (keeps every expiry a valid date). */
const MAX_TTL = 3_153_600_000;

export const CreateKeyRequest = Type.Object(
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

const RoleEnum = Type.Enum([Role.admin, Role.operator, Role.viewer]);

/** Create and rotate answer: the token is shown here only. */
export const IssuedApiKey = Type.Object(
  {
    key_id: Type.String(),
    token: Type.String({ description: 'The Bearer token (a JWT); shown only once.' }),
    role: RoleEnum,
    expires_at: DateTime('9999-12-31T23:59:59.000Z: never expires (ttl 0).'),
    contexts: Type.Array(Type.String()),
  },
  { $id: 'IssuedApiKey' },
);

export const ApiKeyList = Type.Object(
  {
    keys: Type.Array(
      Type.Object({
        key_id: Type.String(),
        role: RoleEnum,
        contexts: Type.Array(Type.String()),
        created_at: DateTime(),
        expires_at: DateTime(),
        created_by: Type.String(),
      }),
    ),
  },
  { $id: 'ApiKeyList' },
);

const KeyIdParam = { key_id: Type.String({ description: 'The key id (key_…).' }) };

const keyDoc = (d: Omit<RouteDoc, 'tags' | 'access'>) => ({
  schema: routeSchema({ ...d, tags: ['api-keys'], access: 'admin' }),
});

const ISSUED_EXAMPLE = {
  key_id: 'key_5b0e1c2d3f4a5b6c7d8e9f00',
  token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJrZXlfNWIwZSJ9.c2lnbmF0dXJl',
  role: 'operator',
  expires_at: '2026-04-15T09:30:00.000Z',
  contexts: ['default'],
};

type KeyParams = { Params: { key_id: string } };

/**
 * Who manages keys: the admin secret (any key), or an admin key, which acts only within its own
 * role and contexts: it creates keys no wider than itself (expiring no later), and lists,
 * rotates and revokes only keys whose contexts are all its own.
 */
export type KeyActor = { kind: 'secret' } | { kind: 'key'; caller: Caller };

/** Whether `actor` may see and manage a key with these contexts. */
function covers(actor: KeyActor, contexts: readonly string[]): boolean {
  if (actor.kind === 'secret') return true;
  return contexts.every((c) => mayUseContext(actor.caller, c));
}

const actorName = (actor: KeyActor): string =>
  actor.kind === 'secret' ? 'admin' : actor.caller.id;

/**
 * Key management: Basic `admin:<SVC_ADMIN_SECRET>` or a Bearer key of role admin. When the
 * secret is unset and no admin key exists, every key route answers 403 (disabled). Every
 * attempt passes the brute-force limits; failures and every change are audited.
 */
export function registerApiKeyRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  keys: ApiKeys,
): void {
  const { config, onStoreError } = ctx;

  const audit = (
    req: FastifyRequest,
    event: AuditEvent,
    actor: KeyActor,
    meta: Pick<ApiKeyMeta, 'key_id' | 'role' | 'contexts'>,
    extra: Record<string, unknown> = {},
  ): void =>
    ctx.audit.emit(event, {
      request_id: attemptOf(req, null).requestId,
      username: '',
      device_ip: '',
      platform: '',
      status: 'ok',
      duration_ms: 0,
      caller: actorName(actor),
      source_ip: req.ip,
      key_id: meta.key_id,
      role: meta.role,
      context: meta.contexts.join(','),
      ...extra,
    });

  const authorize = async (req: FastifyRequest): Promise<KeyActor> => {
    if (!keys.enabled) throw new HttpError(403, 'API keys are disabled: no signing secret');
    return authorizeAdmin(ctx, keys, req);
  };

  /** The key a route acts on: 404 when unknown, 403 when wider than the acting key. */
  const inScope = async (actor: KeyActor, keyId: string): Promise<ApiKeyMeta> => {
    const meta = await keys.meta(keyId);
    if (!meta) throw new HttpError(404, `api key ${keyId} not found`);
    if (!covers(actor, meta.contexts)) {
      throw new HttpError(403, `api key ${keyId} has contexts outside this key's`);
    }
    return meta;
  };

  app.post(
    '/v2/api-keys',
    keyDoc({
      operationId: 'createApiKey',
      summary: 'Create an API key (Basic admin:SVC_ADMIN_SECRET, or an admin key within its scope)',
      body: ref(CreateKeyRequest),
      bodyOptional: true,
      bodyExample: { role: 'operator', contexts: ['default'], ttl: 7776000 },
      ok: {
        201: {
          description: 'Created; the token is shown only here.',
          body: ref(IssuedApiKey),
          example: ISSUED_EXAMPLE,
          headers: ['Cache-Control'],
        },
      },
      errors: [403, 422],
    }),
    guarded(async (req, reply) => {
      const actor = await authorize(req);
      const body = validInput<CreateKeyRequest>(req, 'body');
      const defaultContexts = actor.kind === 'key' ? actor.caller.contexts : ['*'];
      const contexts = [...new Set(body.contexts ?? defaultContexts)];
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
      const role = body.role ?? Role.admin;
      if (actor.kind === 'key') {
        if (!hasRole(actor.caller, role)) {
          throw new HttpError(403, `a ${actor.caller.role} key may not create ${role} keys`);
        }
        if (!covers(actor, contexts)) {
          throw new HttpError(
            403,
            `this key may create keys only within its contexts (${actor.caller.contexts.join(', ')})`,
          );
        }
      }
      const created = await keys.create({
        role,
        contexts,
        ttl: body.ttl ?? config.API_KEY_DEFAULT_TTL,
        createdBy: body.created_by ?? (actor.kind === 'secret' ? 'system' : actor.caller.id),
        parent:
          actor.kind === 'key'
            ? { keyId: actor.caller.keyId!, expiresAt: actor.caller.expiresAt! }
            : null,
      });
      audit(req, AuditEvent.keyCreated, actor, created, { expires_at: created.expires_at });
      return reply.code(201).header('Cache-Control', 'no-store').send(created);
    }, onStoreError),
  );

  app.get(
    '/v2/api-keys',
    keyDoc({
      operationId: 'listApiKeys',
      summary: 'The API keys within the caller’s scope (never their tokens)',
      ok: { 200: { description: 'The keys.', body: ref(ApiKeyList) } },
      errors: [403],
    }),
    guarded(async (req, reply) => {
      const actor = await authorize(req);
      // Listed with the scope of their entries; a key's grant is its token's claims.
      const listed = (await keys.list())
        .filter((m) => covers(actor, m.contexts))
        .map(({ key_id, role, contexts, created_at, expires_at, created_by }) => ({
          key_id,
          role,
          contexts,
          created_at,
          expires_at,
          created_by,
        }));
      return reply.code(200).send({ keys: listed });
    }, onStoreError),
  );

  app.delete<KeyParams>(
    '/v2/api-keys/:key_id',
    keyDoc({
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (and the keys it minted); rejected at once afterwards',
      params: KeyIdParam,
      ok: { 204: { description: 'Revoked.' } },
      errors: [403, 404],
    }),
    guarded<FastifyRequest<KeyParams>>(async (req, reply) => {
      const actor = await authorize(req);
      const target = await inScope(actor, req.params.key_id);
      const revoked = await keys.revoke(target.key_id);
      if (revoked.length === 0) throw new HttpError(404, `api key ${req.params.key_id} not found`);
      audit(req, AuditEvent.keyRevoked, actor, target, { revoked: revoked });
      return reply.code(204).send();
    }, onStoreError),
  );

  app.post<KeyParams>(
    '/v2/api-keys/:key_id/rotate',
    keyDoc({
      operationId: 'rotateApiKey',
      summary: 'A new token for a key (the previous one stops working); same id, role, contexts',
      params: KeyIdParam,
      ok: {
        200: {
          description: 'Rotated; the new token is shown only here.',
          body: ref(IssuedApiKey),
          example: ISSUED_EXAMPLE,
          headers: ['Cache-Control'],
        },
      },
      errors: [403, 404, 409, 415],
    }),
    guarded<FastifyRequest<KeyParams>>(async (req, reply) => {
      const actor = await authorize(req);
      const target = await inScope(actor, req.params.key_id);
      const rotated = await keys.rotate(target.key_id);
      if (rotated === null) throw new HttpError(404, `api key ${req.params.key_id} not found`);
      if (rotated === 'altered') {
        throw new HttpError(
          409,
          `api key ${req.params.key_id} was altered outside the service; revoke it and create a new key`,
        );
      }
      if (rotated === 'expired') {
        throw new HttpError(409, `api key ${req.params.key_id} has expired; create a new key`);
      }
      audit(req, AuditEvent.keyRotated, actor, target);
      return reply.code(200).header('Cache-Control', 'no-store').send(rotated);
    }, onStoreError),
  );
}

/**
 * The administrator behind a request (key and host-key management): the admin secret, or a
 * Bearer key of role admin. Every attempt passes the brute-force limits. 401/403 otherwise.
 */
export async function authorizeAdmin(
  ctx: GatewayContext,
  keys: ApiKeys,
  req: FastifyRequest,
): Promise<KeyActor> {
  const { config, authLimits: limits } = ctx;
  if (!config.SVC_ADMIN_SECRET && !keys.hasAdminKey()) {
    throw new HttpError(
      403,
      'key management is disabled: SVC_ADMIN_SECRET is unset and no admin key exists',
    );
  }
  const header = req.headers.authorization;
  const basic = parseBasic(header);
  if (basic) {
    const attempt = attemptOf(req, basic.username);
    await limits.check(attempt.source, basic.username, attempt, true);
    if (keys.isAdminSecret(basic.username, basic.password)) {
      noteCaller(req, 'admin');
      return { kind: 'secret' };
    }
    await limits.fail({ ...attempt, reason: 'wrong admin secret' });
    throw new HttpError(401, 'invalid admin credentials', {
      'WWW-Authenticate': 'Basic realm="svc"',
    });
  }
  const token = parseBearer(header);
  if (token) {
    const attempt = attemptOf(req, null);
    await limits.check(attempt.source, null, attempt, true);
    const caller = await keys.resolve(token);
    if (!caller) {
      await limits.fail({ ...attempt, reason: 'invalid, expired or revoked API key' });
      throw new HttpError(401, 'invalid, expired or revoked API key', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    noteCaller(req, caller.id);
    if (caller.role !== Role.admin)
      throw new HttpError(403, `role ${caller.role} may not manage keys`);
    return { kind: 'key', caller };
  }
  throw new HttpError(401, 'authentication required (Basic admin or an admin API key)', {
    'WWW-Authenticate': 'Basic realm="svc", Bearer',
  });
}
