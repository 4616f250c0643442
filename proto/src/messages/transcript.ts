import { Type, type Static } from 'typebox';

/** One stretch of a device session in one direction. */
export const TranscriptEntry = Type.Object(
  {
    at: Type.String({ description: 'ISO 8601 time the first character of this stretch passed.' }),
    dir: Type.Enum(['sent', 'received'], { description: 'sent to or received from the device' }),
    data: Type.String({
      description:
        'The text, terminal control sequences removed; passwords, enable secrets, webhook secrets and secret-looking configuration values replaced by ***.',
    }),
  },
  { $id: 'TranscriptEntry', additionalProperties: false },
);
export type TranscriptEntry = Static<typeof TranscriptEntry>;

/**
 * A job's device session transcript (`GET /v2/jobs/{job_id}/transcript`, key = job id in the
 * `svc-transcripts` bucket). At most TRANSCRIPT_MAX_BYTES characters: past the cap the start and
 * the end are kept (where a failure shows) and the middle is dropped.
 */
export const Transcript = Type.Object(
  {
    job_id: Type.String(),
    entries: Type.Array(TranscriptEntry),
    truncated: Type.Boolean({ description: 'true when the middle was dropped at the size cap' }),
    omitted_chars: Type.Integer({ minimum: 0, description: 'characters dropped from the middle' }),
    max_chars: Type.Integer({ description: 'the cap in force (TRANSCRIPT_MAX_BYTES)' }),
  },
  { $id: 'Transcript', additionalProperties: false },
);
export type Transcript = Static<typeof Transcript>;
