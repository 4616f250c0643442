import type { Static, TSchema } from 'typebox';
import type { ValidationIssue } from './messages/http.js';
import { readerFor, toIssues } from './validate.js';

/**
 * Messages and records read from NATS are decoded against their schema here: a bad one is
 * refused whole (never half-used as a cast would), whatever wrote it.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/**
 * Unchecked: for tests and tools that read what they just wrote. Services decode what they read
 * from NATS with `decodeMessage` (or `decodeOrDrop` in consumer loops) against its schema.
 */
export function decodeJson<T>(data: Uint8Array): T {
  return JSON.parse(decoder.decode(data)) as T;
}

/** Whether a KV write failed its compare-and-set (someone wrote the key in between). */
export function isWrongRevision(err: unknown): boolean {
  const text = err instanceof Error ? err.message : String(err);
  return /wrong last sequence|key exists|10071/i.test(text);
}

/** A message or record that is not JSON, or not of its schema's shape. */
export class MalformedMessage extends Error {
  override readonly name = 'MalformedMessage';
  constructor(
    /** The schema's `$id` (or `message` for one without). */
    readonly kind: string,
    /** Where it does not fit; never the values (a message may carry anything). */
    readonly issues: readonly ValidationIssue[],
  ) {
    super(
      `malformed ${kind}: ${issues
        .slice(0, 3)
        .map((i) => `${i.loc.join('.')} ${i.type}`)
        .join(', ')}`,
    );
  }
}

function kindOf(schema: TSchema): string {
  const id = (schema as { $id?: unknown }).$id;
  return typeof id === 'string' ? id : 'message';
}

/**
 * Decodes JSON bytes read from NATS against `schema` (fields of a later release kept, see
 * `readerFor`); throws `MalformedMessage` otherwise.
 */
export function decodeMessage<S extends TSchema>(schema: S, data: Uint8Array | string): Static<S> {
  let value: unknown;
  try {
    value = JSON.parse(typeof data === 'string' ? data : decoder.decode(data));
  } catch {
    throw new MalformedMessage(kindOf(schema), [
      { loc: ['message'], msg: 'not JSON', type: 'json_invalid' },
    ]);
  }
  const valid = readerFor(schema);
  if (!valid(value)) {
    throw new MalformedMessage(kindOf(schema), toIssues(valid.errors ?? [], 'message'));
  }
  return value as Static<S>;
}

/** Malformed messages dropped by this process, by consumer (read by `svc_malformed_messages_total`). */
const dropped = new Map<string, number>();

export function malformedMessagesDropped(): ReadonlyMap<string, number> {
  return dropped;
}

export interface DropContext {
  /** A fixed name of the consumer (a metric label): `dispatcher`, `actor_host`, … */
  consumer: string;
  log: { warn(obj: object, msg: string): void };
  /** What locates the message in a log line: subject, stream sequence, key. */
  where?: Record<string, unknown>;
}

/**
 * For consumer loops: the decoded message, or null when it is malformed, which is then logged
 * and counted here; the caller terminates it (JetStream: `msg.term()`) and goes on. A
 * malformed message never throws out of a loop, so one bad writer cannot stop a consumer.
 */
export function decodeOrDrop<S extends TSchema>(
  schema: S,
  data: Uint8Array | string,
  ctx: DropContext,
): Static<S> | null {
  try {
    return decodeMessage(schema, data);
  } catch (err) {
    if (!(err instanceof MalformedMessage)) throw err;
    noteDropped(err, ctx);
    return null;
  }
}

/**
 * Logs and counts a malformed message a consumer drops: for one read through an API that
 * decodes it (`Jobs.get` throws `MalformedMessage`) instead of through `decodeOrDrop`.
 */
export function noteDropped(err: MalformedMessage, ctx: DropContext): void {
  dropped.set(ctx.consumer, (dropped.get(ctx.consumer) ?? 0) + 1);
  ctx.log.warn(
    { ...ctx.where, consumer: ctx.consumer, kind: err.kind, issues: err.issues.slice(0, 5) },
    `dropping a malformed ${err.kind}`,
  );
}
