import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchCreated, BatchSummary, EnqueueResponse, HealthRecord } from '@svc/proto';
import type { TSchema } from 'typebox';
import { createHttpServer } from '../src/http-server.js';
import { BatchList } from '../src/routes/batches.js';
import { ContextList, FailedJobList, JobList } from '../src/routes/job-queries.js';
import { PlatformList } from '../src/routes/platforms.js';
import { ApiKeyList, IssuedApiKey } from '../src/routes/api-keys.js';
import { namedSchemas } from '../src/routes/openapi.js';
import { ref, routeSchema } from '../src/routes/route-schemas.js';

// Answers serialized from their schema (fast-json-stringify) drop what the schema does not
// name: each such answer, as complete as its writer builds it (every optional field, nulls and
// values, nested records and maps), must reach the client field for field. A field the schema
// does not name (`extra`) is dropped: proof that the schema, not JSON.stringify, wrote it.

const ISO = '2026-01-15T09:30:00.000Z';
const JOB_ID = '3f1c9a4e-8d1b-4e53-9a51-2f7f3e1f0c11';

const SAMPLES: [string, TSchema, unknown[]][] = [
  [
    'EnqueueResponse',
    EnqueueResponse,
    [
      {
        job_id: JOB_ID,
        message: 'job queued',
        queue_position: 3,
        enqueued_at: ISO,
        timeout: 300,
        deduplicated: true,
        idempotent: false,
      },
    ],
  ],
  [
    'FailedJobList',
    FailedJobList,
    [
      {
        jobs: [
          {
            job_id: JOB_ID,
            error: 'connection timed out',
            error_code: 'CONNECTION_TIMEOUT',
            error_retryable: true,
            failed_at: ISO,
            func: 'send_command',
            host: '192.0.2.10',
            platform: 'cisco_ios',
            port: 2222,
          },
          {
            job_id: 'j2',
            error: null,
            error_code: null,
            error_retryable: null,
            failed_at: null,
            func: '',
            host: '',
            platform: '',
            port: 22,
          },
          {
            job_id: 'j3',
            error: 'x',
            error_code: 'AUTH_FAILED',
            error_retryable: false,
            failed_at: ISO,
            func: 'send_config',
            host: 'r1',
            platform: 'juniper_junos',
            port: 830,
          },
        ],
        total: 3,
      },
    ],
  ],
  [
    'ContextList',
    ContextList,
    [
      {
        contexts: [
          { name: 'default', workers: 2, queue_depth: 0 },
          { name: 'lab', workers: 0, queue_depth: 17 },
        ],
      },
      { contexts: [] },
    ],
  ],
  [
    'BatchList',
    BatchList,
    [
      {
        batches: [
          {
            batch_id: 'b1',
            kind: 'config',
            status: 'cancelled',
            total: 4,
            created_at: ISO,
            ended_at: ISO,
            stopped_reason: 'failure ratio 0.5 exceeded 0.25',
          },
          {
            batch_id: 'b2',
            kind: 'command',
            status: 'running',
            total: 1,
            created_at: ISO,
            ended_at: null,
            stopped_reason: null,
          },
          {
            batch_id: 'b3',
            kind: 'structured',
            status: 'finished',
            total: 2,
            created_at: ISO,
            ended_at: ISO,
            stopped_reason: null,
          },
        ],
      },
    ],
  ],
  [
    'BatchSummary',
    BatchSummary,
    [
      {
        batch_id: 'b1',
        kind: 'config',
        status: 'cancelled',
        total: 9,
        counts: { queued: 1, started: 2, finished: 3, failed: 2, cancelled: 1 },
        error_codes: { AUTH_FAILED: 1, CONNECTION_TIMEOUT: 1, 'X-LATER': 4 },
        created_at: ISO,
        ended_at: ISO,
        stopped_reason: 'cancelled by the caller',
      },
      {
        batch_id: 'b2',
        kind: 'command',
        status: 'running',
        total: 0,
        counts: { queued: 0, started: 0, finished: 0, failed: 0, cancelled: 0 },
        error_codes: {},
        created_at: ISO,
        ended_at: null,
        stopped_reason: null,
      },
    ],
  ],
  [
    'BatchCreated',
    BatchCreated,
    [
      {
        batch_id: 'b1',
        jobs: [
          { job_id: JOB_ID, host: '192.0.2.10', port: 22, name: 'core-1' },
          { job_id: 'j2', host: 'r2.example.net', port: 2222 },
        ],
        total: 2,
      },
    ],
  ],
  [
    'PlatformList',
    PlatformList,
    [
      {
        platforms: [
          {
            platform: 'cisco_ios',
            name: 'Cisco IOS',
            source: 'builtin',
            enable: true,
            config_mode: true,
            commit: false,
            commit_required: false,
            save: 'command',
            autodetect: true,
          },
          {
            platform: 'juniper_junos',
            name: 'Junos',
            source: 'builtin',
            enable: false,
            config_mode: true,
            commit: true,
            commit_required: true,
            save: 'commit',
            autodetect: false,
          },
          {
            platform: 'lab_box',
            name: 'Lab box',
            source: 'user',
            enable: false,
            config_mode: false,
            commit: false,
            commit_required: false,
            save: 'none',
            autodetect: false,
          },
          {
            platform: 'auto_box',
            name: 'Auto',
            source: 'user',
            enable: false,
            config_mode: false,
            commit: false,
            commit_required: false,
            save: 'auto',
            autodetect: false,
          },
        ],
      },
    ],
  ],
  [
    'HealthRecord',
    HealthRecord,
    [
      {
        status: 'healthy',
        version: '0.1.0',
        uptime_seconds: 3600,
        components: {
          redis: { status: 'healthy' },
          queue: { status: 'healthy', depth: 4 },
          workers: { status: 'healthy', count: 2, active_jobs: 3 },
          failed_jobs: 7,
        },
      },
      {
        status: 'no_workers',
        version: '0.1.0',
        uptime_seconds: 0,
        components: {
          redis: { status: 'healthy' },
          queue: { status: 'healthy', depth: 0 },
          workers: { status: 'no_workers', count: 0, active_jobs: 0 },
          failed_jobs: 0,
        },
      },
      {
        status: 'degraded',
        version: '0.1.0',
        uptime_seconds: 12,
        components: {
          redis: { status: 'unhealthy' },
          queue: { status: 'unhealthy', depth: 0 },
          workers: { status: 'unhealthy', count: 0, active_jobs: 0 },
          failed_jobs: 0,
        },
        message: 'NATS does not answer',
      },
    ],
  ],
  [
    'IssuedApiKey',
    IssuedApiKey,
    [
      {
        key_id: 'key_0123456789abcdef01234567',
        token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.sig',
        role: 'operator',
        expires_at: '9999-12-31T23:59:59.000Z',
        contexts: ['default', 'lab'],
      },
    ],
  ],
  [
    'ApiKeyList',
    ApiKeyList,
    [
      {
        keys: [
          {
            key_id: 'key_0123456789abcdef01234567',
            role: 'admin',
            contexts: ['*'],
            created_at: ISO,
            expires_at: '9999-12-31T23:59:59.000Z',
            created_by: 'system',
          },
          {
            key_id: 'key_fedcba9876543210fedcba98',
            role: 'viewer',
            contexts: [],
            created_at: ISO,
            expires_at: ISO,
            created_by: 'key_0123456789abcdef01234567',
          },
        ],
      },
      { keys: [] },
    ],
  ],
];

async function answerOf(schema: TSchema, body: unknown): Promise<{ status: number; json: any }> {
  const app = createHttpServer({ tls: null, bodyLimit: 1 << 20 });
  for (const s of namedSchemas([schema])) app.addSchema(s);
  app.get(
    '/answer',
    {
      schema: routeSchema({
        operationId: 'answer',
        summary: 'a sample answer',
        tags: ['test'],
        access: 'none',
        ok: { 200: { description: 'the sample', body: ref(schema) } },
      }),
    },
    (_req, reply) => reply.code(200).send(body),
  );
  try {
    const a = await app.inject({ method: 'GET', url: '/answer' });
    return { status: a.statusCode, json: JSON.parse(a.body) };
  } finally {
    await app.close();
  }
}

for (const [name, schema, samples] of SAMPLES) {
  test(`${name}: every field a client gets today reaches it from the schema's serializer; a field the schema does not name is dropped`, async () => {
    for (const sample of samples) {
      const a = await answerOf(schema, sample);
      assert.equal(a.status, 200);
      assert.deepEqual(a.json, sample);
      const b = await answerOf(schema, { ...(sample as object), extra: 'not in the schema' });
      assert.deepEqual(b.json, sample, 'serialized from the schema');
    }
  });
}

// The job list stays JSON.stringify'd: its tags come from stored records, which the gateway
// reads relaxed (a later release's writes kept), and a tag key this release's pattern refuses
// would make the schema's serializer fail the answer.
test("JobList: a record's tag this release would refuse is answered as stored", async () => {
  const list = {
    jobs: [
      {
        job_id: JOB_ID,
        status: 'finished',
        created_at: ISO,
        ended_at: null,
        tags: { 'a later key!': 'v'.repeat(100), site: 'lab' },
        extra: 'a later field',
      },
    ],
    pagination: { page: 1, per_page: 20, total: 1, pages: 1 },
  };
  const a = await answerOf(JobList, list);
  assert.equal(a.status, 200);
  assert.deepEqual(a.json, list);
});
