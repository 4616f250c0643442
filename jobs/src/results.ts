import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  ErrorCode,
  ObjectBuckets,
  ResultsObject,
  SvcError,
  decodeMessage,
  encodeJson,
  type JobRecord,
  type ResultsRef,
} from '@svc/proto';
import { retryTransient } from '@svc/nats';

/** Default of SVC_MAX_RESULT_BYTES: the largest results a job may keep. */
export const DEFAULT_MAX_RESULT_BYTES = 64 * 1024 * 1024;

/** Room a record needs besides its results (spec, statuses, errors). */
const RECORD_ROOM = 32 * 1024;

/** Largest results (JSON bytes) kept inside a record: one NATS message less room for the rest. */
export function inlineResultLimit(nc: NatsConnection): number {
  return (nc.info?.max_payload ?? 1_048_576) - RECORD_ROOM;
}

/** How a record holds its results: inline, or `results: null` with a pointer. */
export type StoredResults = Pick<JobRecord, 'results' | 'results_ref'>;

/**
 * Job results too large for a record (a record is one NATS message, max_payload) are kept as
 * JSON in the `svc-results` object store under the job id; the record points at them with
 * `results_ref`. Every reader resolves a record through `resolve`, so none of them sees the
 * pointer. The object is written before the record's terminal transition: an object left by a
 * transition that lost (the job was cancelled meanwhile) is never read and expires with the
 * bucket's max age (JOB_TTL_SUCCESS).
 */
export class JobResults {
  constructor(
    private readonly store: ObjectStore,
    /** Largest results kept inline, bytes of JSON. */
    readonly inlineLimit: number,
    /** Largest results kept at all (SVC_MAX_RESULT_BYTES). */
    readonly maxBytes = DEFAULT_MAX_RESULT_BYTES,
  ) {}

  /** Opens the bucket (ensureTopology created it) without a round trip. */
  static async open(nc: NatsConnection, maxBytes = DEFAULT_MAX_RESULT_BYTES): Promise<JobResults> {
    const store = await new Objm(nc).open(ObjectBuckets.results, false);
    return new JobResults(store, inlineResultLimit(nc), maxBytes);
  }

  /**
   * Decides where `results` live and writes them to the object store when they must go there.
   * Throws RESULT_TOO_LARGE past `maxBytes`.
   */
  async keep(jobId: string, results: JobRecord['results']): Promise<StoredResults> {
    if (results === null) return { results: null };
    const json = encodeJson(results);
    if (json.length > this.maxBytes) {
      throw new SvcError(
        ErrorCode.RESULT_TOO_LARGE,
        `results of ${json.length} bytes exceed SVC_MAX_RESULT_BYTES (${this.maxBytes} bytes)`,
      );
    }
    if (json.length <= this.inlineLimit) return { results };
    // Chunks as large as a message allows: fewer messages, and results just past the inline
    // limit take two.
    // A put may be repeated: it replaces the object of the same name.
    const info = await retryTransient(() =>
      this.store.putBlob({ name: jobId, options: { max_chunk_size: this.inlineLimit } }, json),
    );
    const ref: ResultsRef = {
      bucket: ObjectBuckets.results,
      name: jobId,
      size: info.size,
      digest: info.digest,
    };
    return { results: null, results_ref: ref };
  }

  /**
   * The record with its results in place. An object that has expired or was lost leaves
   * `results: null`; a store that cannot be read throws (the caller answers 503).
   */
  async resolve(record: JobRecord): Promise<JobRecord> {
    const ref = record.results_ref;
    if (!ref) return record;
    // The object store checks the digest while reading: a damaged object throws here.
    const data = await this.store.getBlob(ref.name);
    const resolved: JobRecord = {
      ...record,
      results: data === null ? null : decodeMessage(ResultsObject, data),
    };
    delete resolved.results_ref;
    return resolved;
  }
}
