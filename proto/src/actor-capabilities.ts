import type { JobSpec } from './messages/job.js';

/**
 * What an actor host understands beyond the jobs every release runs, so that no host runs a job
 * it would misread: an actor host of an earlier release ignores the spec fields it does not
 * know and would run a dry run as a real push. The gateway lists a job's needs in its envelope
 * (`requires`), actor hosts list theirs in their heartbeat (`capabilities`), and an actor host
 * refuses a job that needs one it lacks (`ACTOR_OUTDATED`). docs/operations.md (upgrade order).
 */
export const ActorCapability = {
  /**
   * Configuration workflows (issue 27): `dry_run`, `checks`, `error_patterns`,
   * `commit_options` and `confirm_of` in a config job's spec.
   */
  configWorkflows: 'config_workflows',
  /**
   * The host consumes the shards of a context's jobs it is assigned (docs/architecture.md, job
   * path): a host of the release before shards takes jobs only from its own placement subject, so the
   * dispatcher assigns shards only to hosts that list this.
   */
  jobShards: 'job_shards',
} as const;
export type ActorCapability = (typeof ActorCapability)[keyof typeof ActorCapability];

/** Every capability of an actor host of this release (its heartbeat's `capabilities`). */
export const ACTOR_CAPABILITIES: readonly string[] = Object.values(ActorCapability);

/** The capabilities a job needs of the actor host that runs it (the envelope's `requires`). */
export function requiredCapabilities(spec: JobSpec): ActorCapability[] {
  const workflow =
    spec.dry_run === true ||
    spec.checks !== undefined ||
    spec.error_patterns !== undefined ||
    spec.commit_options !== undefined ||
    spec.confirm_of !== undefined;
  return workflow ? [ActorCapability.configWorkflows] : [];
}

/** The needs of `requires` that `capabilities` lacks (a heartbeat without any: all of them). */
export function missingCapabilities(
  requires: readonly string[] | undefined,
  capabilities: readonly string[] | undefined,
): string[] {
  return (requires ?? []).filter((c) => !(capabilities ?? []).includes(c));
}
