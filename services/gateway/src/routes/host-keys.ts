import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { Buckets, DateTime, canonicalHost } from '@svc/proto';
import { AuditEvent } from '@svc/telemetry';
import { HostKeyStore, parseOpenSshPublicKey, type PinnedHostKey } from '@svc/device-access';
import type { ApiKeys } from '../api-keys.js';
import { attemptOf } from '../authenticate.js';
import { mayUseContext } from '../caller.js';
import type { GatewayContext } from '../gateway-context.js';
import { HttpError } from '../http-errors.js';
import { validInput } from '../request-input.js';
import { authorizeAdmin, type KeyActor } from './api-keys.js';
import { guarded } from './context.js';
import { ISSUE, ref, routeSchema, type IssueText, type RouteDoc } from './route-schemas.js';

export const LoadHostKeyRequest = Type.Object(
  {
    public_key: Type.String({
      minLength: 1,
      maxLength: 16_384,
      description: 'OpenSSH public key line: `<type> <base64> [comment]`.',
    }),
  },
  { $id: 'LoadHostKeyRequest', additionalProperties: false },
);
type LoadHostKeyRequest = Static<typeof LoadHostKeyRequest>;

type DeviceParams = { Params: { context: string; host: string; port: string } };

export const PinnedHostKeySchema = Type.Object(
  {
    context: Type.String(),
    host: Type.String(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    key_type: Type.String({ description: 'e.g. ssh-ed25519' }),
    public_key: Type.String({ description: 'The key blob, base64 (as in known_hosts).' }),
    fingerprint: Type.String({ description: '`SHA256:<base64>` as OpenSSH prints it.' }),
    source: Type.Enum(['tofu', 'admin'], {
      description: 'tofu: pinned on first use; admin: loaded by an administrator.',
    }),
    pinned_at: DateTime(),
  },
  { $id: 'PinnedHostKey' },
);

export const HostKeyList = Type.Object(
  { host_keys: Type.Array(PinnedHostKeySchema) },
  { $id: 'HostKeyList' },
);

const DeviceParamsSchema = {
  context: Type.String({ description: 'A routing context of SVC_CONTEXTS.' }),
  host: Type.String({ description: 'The device address or name.' }),
  port: Type.Integer({
    minimum: 1,
    maximum: 65535,
    description: 'SSH port, 1-65535.',
    [ISSUE]: { msg: 'port must be 1-65535', type: 'value_error' } satisfies IssueText,
  }),
};

const hostKeyDoc = (d: Omit<RouteDoc, 'tags' | 'access'>) => ({
  schema: routeSchema({ ...d, tags: ['host-keys'], access: 'admin' }),
});

/**
 * Pinned SSH host keys (`svc-hostkeys`): list, load (pre-load for `strict`, or replace after a
 * verified key change) and forget. Admins only, each within its own contexts.
 */
export function registerHostKeyRoutes(
  app: FastifyInstance,
  ctx: GatewayContext,
  keys: ApiKeys,
): void {
  const { config, onStoreError, audit } = ctx;
  const store = new HostKeyStore(ctx.stores[Buckets.hostKeys]);
  const mayAdminister = (who: KeyActor, context: string) =>
    who.kind === 'secret' || mayUseContext(who.caller, context);
  const nameOf = (who: KeyActor) => (who.kind === 'secret' ? 'admin' : who.caller.id);

  const device = async (req: FastifyRequest<DeviceParams>) => {
    const who = await authorizeAdmin(ctx, keys, req);
    const { context, host } = req.params;
    if (!config.SVC_CONTEXTS.includes(context)) {
      throw new HttpError(404, `unknown context ${context}`);
    }
    if (!mayAdminister(who, context)) {
      throw new HttpError(403, `this key may not administer context ${context}`);
    }
    // After the caller and the context: the path's values converted from text (a port as an integer).
    const { port } = validInput<{ port: number }>(req, 'params');
    return { who, context, host: canonicalHost(host), port };
  };

  app.get(
    '/v2/host-keys',
    hostKeyDoc({
      operationId: 'listHostKeys',
      summary: 'Pinned SSH host keys of the contexts the caller administers',
      ok: { 200: { description: 'The pinned keys.', body: ref(HostKeyList) } },
      errors: [403],
    }),
    guarded(async (req, reply) => {
      const who = await authorizeAdmin(ctx, keys, req);
      const all = await store.list();
      const host_keys: PinnedHostKey[] = all.filter((k) => mayAdminister(who, k.context));
      return reply.code(200).send({ host_keys });
    }, onStoreError),
  );

  app.put<DeviceParams>(
    '/v2/host-keys/:context/:host/:port',
    hostKeyDoc({
      operationId: 'loadHostKey',
      summary: 'Load (pin) a device’s SSH host key, replacing any pinned one',
      params: DeviceParamsSchema,
      body: ref(LoadHostKeyRequest),
      bodyExample: { public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7l5Jb0rK3f8m2o router1' },
      ok: { 200: { description: 'The pinned key.', body: ref(PinnedHostKeySchema) } },
      errors: [403, 404, 422],
    }),
    guarded<FastifyRequest<DeviceParams>>(async (req, reply) => {
      const { who, context, host, port } = await device(req);
      const body = validInput<LoadHostKeyRequest>(req, 'body');
      const parsed = parseOpenSshPublicKey(body.public_key);
      if (parsed === null) {
        throw HttpError.validation([
          {
            loc: ['body', 'public_key'],
            msg: 'not an OpenSSH public key line (`ssh-ed25519 AAAA… [comment]`)',
            type: 'value_error',
          },
        ]);
      }
      const pin = await store.put(context, host, port, parsed.blob);
      audit.emit(AuditEvent.hostKeyLoaded, {
        request_id: attemptOf(req, null).requestId,
        username: '',
        caller: nameOf(who),
        source_ip: req.ip,
        device_ip: `${host}:${port}`,
        platform: '',
        status: 'loaded',
        duration_ms: 0,
        context,
        fingerprint: pin.fingerprint,
      });
      return reply.code(200).send(pin);
    }, onStoreError),
  );

  app.delete<DeviceParams>(
    '/v2/host-keys/:context/:host/:port',
    hostKeyDoc({
      operationId: 'forgetHostKey',
      summary: 'Forget a device’s pinned SSH host key',
      params: DeviceParamsSchema,
      ok: { 204: { description: 'Forgotten.' } },
      errors: [403, 404],
    }),
    guarded<FastifyRequest<DeviceParams>>(async (req, reply) => {
      const { who, context, host, port } = await device(req);
      if (!(await store.delete(context, host, port))) {
        throw new HttpError(404, `no host key pinned for ${host}:${port} in context ${context}`);
      }
      audit.emit(AuditEvent.hostKeyForgotten, {
        request_id: attemptOf(req, null).requestId,
        username: '',
        caller: nameOf(who),
        source_ip: req.ip,
        device_ip: `${host}:${port}`,
        platform: '',
        status: 'forgotten',
        duration_ms: 0,
        context,
      });
      return reply.code(204).send();
    }, onStoreError),
  );
}
