import type { FastifyRequest } from 'fastify';
import {
  basicCaller,
  parseBasic,
  parseBearer,
  type BearerResolver,
  type Caller,
} from './caller.js';
import { HttpError } from './http-errors.js';

/**
 * Basic: the credentials are the device's, so any well-formed pair is a caller (the device
 * decides). Bearer: a key the resolver knows. Anything else is 401.
 */
export function createAuthenticator(resolveBearer: BearerResolver | null) {
  return async (req: FastifyRequest): Promise<Caller> => {
    const header = req.headers.authorization;
    const basic = parseBasic(header);
    if (basic) return basicCaller(basic);
    const token = parseBearer(header);
    if (token && resolveBearer) {
      const caller = await resolveBearer(token);
      if (caller) return caller;
      throw new HttpError(401, 'invalid, expired or revoked API key', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    throw new HttpError(401, 'authentication required (Basic or Bearer)', {
      'WWW-Authenticate': 'Basic realm="svc", Bearer',
    });
  };
}
