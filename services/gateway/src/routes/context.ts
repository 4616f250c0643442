import type { FastifyReply, FastifyRequest } from 'fastify';
import { reportCredentialMiss } from '../authenticate.js';
import type { Caller } from '../caller.js';
import { HttpError, sendMessage, sendStoreUnavailable, sendValidation } from '../http-errors.js';

/** Establishes the caller of a request or throws 401. */
export type Authenticate = (req: FastifyRequest) => Promise<Caller>;

/**
 * Wraps a route body: HttpErrors become their answers; any other failure means the store (NATS)
 * failed, answered 503 with Retry-After as the specification asks. Bad input never crashes. A
 * request answered 503 at STORE_TIMEOUT while its work went on still counts and reports its
 * failure; its answer is not sent again (http-server.ts).
 */
export function guarded<R extends FastifyRequest>(
  fn: (req: R, reply: FastifyReply) => Promise<unknown>,
  onStoreError?: (err: unknown, req: FastifyRequest) => void,
) {
  return async (req: R, reply: FastifyReply): Promise<unknown> => {
    try {
      return await fn(req, reply);
    } catch (err) {
      if (err instanceof HttpError) {
        if (err.foreignJob) {
          try {
            await reportCredentialMiss(req);
          } catch (countErr) {
            onStoreError?.(countErr, req);
          }
        }
        for (const [k, v] of Object.entries(err.headers)) void reply.header(k, v);
        if (err.issues) return sendValidation(reply, err.issues);
        return sendMessage(reply, err.status, err.message);
      }
      onStoreError?.(err, req);
      return sendStoreUnavailable(reply);
    }
  };
}
