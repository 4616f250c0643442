import type { JobEnvelope, JobSpec } from '../src/messages/job.js';
import type { BuiltinDriverFacts } from '../src/driver-description.js';
import { PLATFORMS } from '../src/platforms.js';

/**
 * Data the tests of several packages build their jobs from, exported as `@svc/proto/test-fixtures`
 * (proto owns the shapes; every package's tests may depend on proto, none on another's tests).
 * Never imported by runtime code (lint rule).
 */

/** A complete read job's spec, as the gateway stores it: the base of the tests' records. */
export const commandSpec: JobSpec = {
  kind: 'command',
  context: 'default',
  host: '127.0.0.1',
  port: 22,
  platform: 'cisco_ios',
  commands: ['show version'],
  conn_timeout: 10,
  read_timeout: 10,
  expect_string: null,
  tags: {},
  webhook_url: null,
  save_config: false,
  commit: false,
  textfsm_template: null,
  ttp_template: null,
};

/** The envelope of a `commandSpec` job never placed yet (sealed secrets are a stand-in). */
export function commandEnvelope(jobId: string): JobEnvelope {
  return {
    v: 1,
    job_id: jobId,
    owner: 'basic:u',
    username: 'u',
    spec: commandSpec,
    sealed: 'x',
    enqueued_at: new Date().toISOString(),
    placement: 0,
    dedup_key: null,
  };
}

/**
 * Built-in driver facts for submission tests that do not exercise commit options or dry runs (the
 * real table is `@svc/drivers`', which proto cannot import; its tests cover those checks).
 */
export const NO_COMMIT_DRIVERS: BuiltinDriverFacts = Object.fromEntries(
  PLATFORMS.map((p) => [p, { save: 'none', commit: null }]),
) as unknown as BuiltinDriverFacts;
