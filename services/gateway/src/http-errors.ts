import type { FastifyReply } from 'fastify';
import type { ValidationIssue } from '@svc/proto';

/** Sends `{ message }` with a status: the body of every 4xx/5xx except 422. */
export function sendMessage(
  reply: FastifyReply,
  status: number,
  message: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply.code(status).send({ message, ...extra });
}

/** Sends the specification's 422 body. */
export function sendValidation(reply: FastifyReply, issues: ValidationIssue[]): FastifyReply {
  return reply.code(422).send({ message: 'validation failed', validation_error: { json: issues } });
}

/** The store (NATS) failed: 503 with Retry-After: 10, as the specification asks. */
export function sendStoreUnavailable(reply: FastifyReply): FastifyReply {
  return reply
    .code(503)
    .header('Retry-After', '10')
    .send({ message: 'the job store is unavailable; retry later' });
}

/** An outcome a route handler turns into an HTTP answer. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly issues: ValidationIssue[] | null = null,
  ) {
    super(message);
  }

  /** 403 for a job of another owner; a Basic caller's miss counts as a failed authentication. */
  static foreignJob(): HttpError {
    const err = new HttpError(403, 'this job belongs to another caller');
    err.foreignJob = true;
    return err;
  }

  foreignJob = false;

  static validation(issues: ValidationIssue[]): HttpError {
    return new HttpError(422, 'validation failed', {}, issues);
  }
}
