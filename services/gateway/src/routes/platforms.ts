import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { PLATFORMS, type DriverDescription } from '@svc/proto';
import { BUILTIN_DRIVERS } from '@svc/drivers';
import type { GatewayContext } from '../gateway-context.js';
import { guarded } from './context.js';
import { ref, routeSchema } from './route-schemas.js';

export const PlatformRecord = Type.Object(
  {
    platform: Type.String({ description: 'the value of a job’s platform field' }),
    name: Type.String({ description: 'operating system' }),
    source: Type.Union([Type.Literal('builtin'), Type.Literal('user')], {
      description: 'built in, or a driver file of SVC_DRIVERS_DIR',
    }),
    enable: Type.Boolean({ description: 'the driver enters enable mode' }),
    config_mode: Type.Boolean({
      description: 'configuration lines run in a configuration mode (false: at the prompt)',
    }),
    commit: Type.Boolean({ description: 'send-config accepts commit: true' }),
    commit_required: Type.Boolean({ description: 'send-config is refused without commit' }),
    save: Type.Union(
      [Type.Literal('command'), Type.Literal('commit'), Type.Literal('auto'), Type.Literal('none')],
      {
        description:
          'how save_config persists: a save command, the commit, automatically, or not at all',
      },
    ),
    autodetect: Type.Boolean({ description: 'autodetect can recognise the platform' }),
  },
  { $id: 'PlatformRecord' },
);
export type PlatformRecord = Static<typeof PlatformRecord>;
export const PlatformList = Type.Object(
  { platforms: Type.Array(PlatformRecord) },
  { $id: 'PlatformList' },
);

function recordOf(d: DriverDescription, source: 'builtin' | 'user'): PlatformRecord {
  return {
    platform: d.platform,
    name: d.name,
    source,
    enable: d.enable !== null,
    config_mode: d.config.enter !== null,
    commit: d.commit !== null,
    commit_required: d.commit?.required === true,
    save: typeof d.save === 'object' ? 'command' : d.save,
    autodetect: d.fingerprint !== undefined,
  };
}

/** GET /v2/platforms: every platform a job may name, built in first, then the user drivers. */
export function registerPlatformRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const platforms = [
    ...PLATFORMS.map((p) => recordOf(BUILTIN_DRIVERS[p], 'builtin')),
    ...ctx.userDrivers.map((d) => recordOf(d, 'user')),
  ];
  app.get(
    '/v2/platforms',
    {
      schema: routeSchema({
        operationId: 'listPlatforms',
        summary: 'Every platform a job may name: built-in drivers, then SVC_DRIVERS_DIR ones',
        tags: ['operations'],
        access: 'caller',
        ok: { 200: { description: 'The platforms.', body: ref(PlatformList) } },
      }),
    },
    guarded(async (req, reply) => {
      await ctx.authenticate(req);
      return reply.code(200).send({ platforms });
    }, ctx.onStoreError),
  );
}
