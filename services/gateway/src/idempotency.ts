import { createHash } from 'node:crypto';
import type { Caller } from './caller.js';

/**
 * `svc-idem` key of an X-Idempotency-Key. Scoped to the caller: the same header value from
 * another caller is another key (and never reveals that caller's job). Hashed, so any header
 * text is a valid KV key and none of it is stored in clear. The bucket's TTL is IDEMPOTENCY_TTL.
 */
export function idempotencyKeyOf(caller: Caller, headerValue: string): string {
  return `i_${createHash('sha256').update(`${caller.id}\0${headerValue}`, 'utf8').digest('hex')}`;
}
