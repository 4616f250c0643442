import { createHash } from 'node:crypto';
import type { JobSpec } from '@svc/proto';
import type { Caller } from './caller.js';

/**
 * `svc-dedup` key of a submission: a hash of the caller, context, job kind, host, port,
 * platform, device username and the commands in order, plus the fields that change what the job
 * does or returns (config save/commit, templates, expect_string, answers, the SSH profile and jump hosts), so that two jobs share a key
 * only when one's result can stand for the other's. Scoped to the caller so nobody is ever given
 * another caller's job. The key lives in the job record's `dedup_key` and is released when the
 * job ends (JobLifecycle); the bucket TTL (JOB_TIMEOUT + 60 s) bounds a leak.
 */
export function dedupKeyOf(caller: Caller, spec: JobSpec, username: string): string {
  const material = JSON.stringify([
    caller.id,
    spec.context,
    spec.kind,
    spec.host.toLowerCase(),
    spec.port,
    spec.platform,
    username,
    spec.commands,
    spec.save_config,
    spec.commit,
    spec.textfsm_template,
    spec.ttp_template,
    spec.expect_string,
    spec.stop_on_error ?? false,
    spec.ssh ?? null,
    spec.answers ?? [],
    // Only when set, so keys of jobs without them stay as they were: a dry run never stands
    // for a push (nor a push for a dry run), and a job with its own error patterns may fail
    // where one without them finishes.
    ...(spec.dry_run === true ? [{ dry_run: true }] : []),
    ...(spec.checks !== undefined ? [{ checks: spec.checks }] : []),
    ...(spec.error_patterns !== undefined ? [{ error_patterns: spec.error_patterns }] : []),
    ...(spec.commit_options !== undefined ? [{ commit_options: spec.commit_options }] : []),
    ...(spec.confirm_of !== undefined ? [{ confirm_of: spec.confirm_of }] : []),
  ]);
  return `d_${createHash('sha256').update(material, 'utf8').digest('hex')}`;
}
