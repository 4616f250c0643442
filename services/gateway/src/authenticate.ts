import type { FastifyRequest } from 'fastify';
import type { AuthFailure, AuthLimits } from './auth-limits.js';
import {
  basicCaller,
  parseBasic,
  parseBearer,
  type BearerResolver,
  type Caller,
} from './caller.js';
import { HttpError } from './http-errors.js';
import { noteCaller, requestIdOf } from './http-server.js';
import { endpointOf } from './http-tracing.js';

export interface AuthenticatorDeps {
  resolveBearer: BearerResolver | null;
  /** HMAC key of Basic owner ids (see `basicOwnerId`). */
  ownerKey: Uint8Array;
  /** BASIC_AUTH_ENABLED. */
  basicEnabled: boolean;
  limits: AuthLimits;
}

/** Per request: counts a Basic credential that missed a job (see `reportCredentialMiss`). */
const misses = new WeakMap<FastifyRequest, () => Promise<void>>();

/** What an authentication attempt of `req` looks like in the audit and the limits. */
export function attemptOf(req: FastifyRequest, username: string | null): AuthFailure {
  return {
    source: req.ip,
    username,
    reason: '',
    requestId: requestIdOf(req),
    route: `${req.method} ${endpointOf(req)}`,
  };
}

/**
 * Basic: the credentials are the device's, so any well-formed pair is a caller (the device
 * decides) whose identity is the whole pair. Bearer: a key the resolver knows. Anything else is
 * 401. Every attempt first passes the brute-force limits (429 while locked).
 */
export function createAuthenticator(deps: AuthenticatorDeps) {
  const { limits } = deps;
  return async (req: FastifyRequest): Promise<Caller> => {
    const header = req.headers.authorization;
    const basic = parseBasic(header);
    if (basic && deps.basicEnabled) {
      const attempt = attemptOf(req, basic.username);
      await limits.check(attempt.source, basic.username, attempt);
      const caller = basicCaller(basic, deps.ownerKey);
      misses.set(req, () =>
        limits.fail({ ...attempt, caller: caller.id, reason: 'job of another credential' }),
      );
      noteCaller(req, caller.id);
      return caller;
    }
    const token = parseBearer(header);
    if (token && deps.resolveBearer) {
      const attempt = attemptOf(req, null);
      await limits.check(attempt.source, null, attempt);
      const caller = await deps.resolveBearer(token);
      if (caller) {
        noteCaller(req, caller.id);
        return caller;
      }
      await limits.fail({ ...attempt, reason: 'invalid, expired or revoked API key' });
      throw new HttpError(401, 'invalid, expired or revoked API key', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    if (basic) {
      throw new HttpError(401, 'Basic authentication is disabled (BASIC_AUTH_ENABLED=false)', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    throw new HttpError(401, 'authentication required (Basic or Bearer)', {
      'WWW-Authenticate': 'Basic realm="svc", Bearer',
    });
  };
}

/**
 * A Basic caller was refused a job of another owner: with ownership bound to the password, that
 * answer tells a guesser its password was wrong, so it counts as an authentication failure.
 */
export async function reportCredentialMiss(req: FastifyRequest): Promise<void> {
  await misses.get(req)?.();
}
