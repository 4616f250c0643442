import {
  Buckets,
  ErrorCode,
  SvcError,
  algorithmsFor,
  deviceNetworkPolicy,
  sshProfiles,
  type DeviceSecrets,
  type JobRecord,
} from '@svc/proto';
import {
  CircuitBreaker,
  HostKeyStore,
  LockoutLedger,
  fingerprintOf,
  hostKeyModes,
  resolveHost,
  type BreakerVerdict,
} from '@svc/device-access';
import { KvMirror, type Stores } from '@svc/nats';
import { type Logger } from '@svc/telemetry';
import type { DeviceActorConfig } from '../config.js';
import type { DeviceJob } from '../device/device-job.js';
import { hostKeyVerifier } from '../device/ssh/host-key-trust.js';
import type { SshAlgorithms, SshHop } from '../device/ssh/ssh-connect.js';

/**
 * One party of a job's route, as its guards know it: a jump host or the device, each keyed
 * like a device (context, resolved address, port) with the user name that logs in to it.
 */
export interface RouteParty {
  key: string;
  username: string;
  /** Where the party is reached: its guard key is re-read after a failure (a first contact pins). */
  context: string;
  address: string;
  port: number;
  /** `jump host host:port` or `host:port` (error texts). */
  label: string;
}

/** A job the guards let through: its route's parties and what each breaker said. */
export interface Admitted {
  /** The jump hosts in order. */
  jumps: readonly RouteParty[];
  device: RouteParty;
  /** Keys whose breaker had failures on record: a success writes them back clean. */
  unclean: readonly string[];
}

/** How far a failed job got: whether the device was reached, how many jump hosts it passed. */
export interface Progress {
  reached: boolean;
  jumpsPassed: number;
}

/**
 * The guards between a started job and its device, shared by every actor of a host: the
 * reachability policy on the resolved address, host-key trust, the SSH profile, jump hosts,
 * device-account lockout and the circuit breaker. Breaker and lockout read watched copies of
 * their buckets (no round trip per job) and fail open when the store hiccups: a cluster
 * electing a leader must not fail a job.
 */
export class DeviceAdmission {
  private constructor(
    private readonly breaker: CircuitBreaker,
    private readonly lockout: LockoutLedger,
    private readonly mirrors: KvMirror[],
    private readonly reachable: ReturnType<typeof deviceNetworkPolicy>,
    private readonly hostKeys: HostKeyStore,
    private readonly hostKeyMode: ReturnType<typeof hostKeyModes>,
    private readonly sshProfile: ReturnType<typeof sshProfiles>,
  ) {}

  static async start(
    config: DeviceActorConfig,
    stores: Stores,
    log: Logger,
  ): Promise<DeviceAdmission> {
    const breakerMirror = await KvMirror.start(stores[Buckets.breakers], '>', log);
    const lockoutMirror = await KvMirror.start(stores[Buckets.lockout], '>', log);
    const hostKeyMode = hostKeyModes(config.HOST_KEY_POLICY);
    for (const context of config.WORKER_CONTEXTS) {
      if (hostKeyMode(context) === 'off')
        log.warn({ context }, 'host keys are not checked in this context (HOST_KEY_POLICY off)');
    }
    return new DeviceAdmission(
      new CircuitBreaker(
        stores[Buckets.breakers],
        config.BREAKER_THRESHOLD,
        config.BREAKER_OPEN_SECONDS * 1000,
        breakerMirror,
      ),
      new LockoutLedger(
        stores[Buckets.lockout],
        config.LOCKOUT_THRESHOLD,
        config.LOCKOUT_WINDOW * 1000,
        lockoutMirror,
      ),
      [breakerMirror, lockoutMirror],
      deviceNetworkPolicy(config),
      new HostKeyStore(stores[Buckets.hostKeys]),
      hostKeyMode,
      sshProfiles(config.SSH_PROFILE),
    );
  }

  /** The host-key check of the job's own connection (set before anything can connect). */
  verifierFor(spec: JobRecord['spec'], address: string, log: Logger): DeviceJob['verifyHostKey'] {
    return hostKeyVerifier(
      this.hostKeys,
      this.hostKeyMode(spec.context),
      { context: spec.context, host: spec.host, address, port: spec.port },
      log,
    );
  }

  /**
   * The device key (its pinned host key's) of the job's address before it connects, or null
   * when nothing is pinned there yet (first contact) or the store does not answer.
   */
  async pinnedDeviceOf(spec: JobRecord['spec'], address: string): Promise<string | null> {
    return this.hostKeys.pinnedDeviceOf(spec.context, address, spec.port);
  }

  /**
   * The device key of a host key the handshake accepted (it is the pinned one), or null when the
   * context does not check host keys (HOST_KEY_POLICY off: the address is the device).
   */
  deviceOfAcceptedKey(spec: JobRecord['spec'], key: Buffer): string | null {
    if (this.hostKeyMode(spec.context) === 'off') return null;
    return HostKeyStore.deviceOf(spec.context, fingerprintOf(key));
  }

  /**
   * Every check before the session opens, in order; completes `job` with the SSH profile, key
   * and jump hosts. Throws the job's failure (a SvcError) when a guard refuses it. Each jump
   * host has its own lockout and breaker, checked like the device's.
   */
  async admit(
    job: DeviceJob,
    record: JobRecord,
    secrets: DeviceSecrets,
    address: string | null,
    log: Logger,
  ): Promise<Admitted> {
    const spec = record.spec;
    if (address === null) {
      throw new SvcError(
        ErrorCode.HOST_UNREACHABLE,
        `host unreachable: the name ${spec.host} did not resolve`,
      );
    }
    // Checked on the address the session will connect to, before any guard or connection.
    const verdict = this.reachable.check(spec.context, spec.host, address);
    if (!verdict.allowed) throw new SvcError(ErrorCode.ADDRESS_NOT_ALLOWED, verdict.reason);
    // The SSH profile: the job's, else its context's; jump hosts resolved and checked alike.
    const algorithms = algorithmsFor(
      spec.ssh?.profile ?? this.sshProfile(spec.context),
      spec.ssh?.algorithms ?? null,
    );
    // Names were checked against SSH_ALGORITHM_NAMES at submission; one the library does not
    // know fails the login with SSH_NEGOTIATION_FAILED.
    if (Object.keys(algorithms).length > 0) job.algorithms = algorithms as SshAlgorithms;
    job.privateKey = secrets.private_key ?? null;
    job.passphrase = secrets.passphrase ?? null;
    if (spec.ssh !== undefined && spec.ssh.jump_hosts.length > 0) {
      job.jumpHosts = await this.jumpHostsOf(spec, secrets, log);
    }
    // Keyed by the pinned host key where there is one: one device, whatever address reaches it.
    const jumps: RouteParty[] = [];
    for (const hop of job.jumpHosts ?? []) {
      const jumpAddress = hop.address ?? hop.host;
      jumps.push({
        key: await this.hostKeys.guardKeyOf(spec.context, jumpAddress, hop.port),
        username: hop.username,
        label: `jump host ${hop.host}:${hop.port}`,
        context: spec.context,
        address: jumpAddress,
        port: hop.port,
      });
    }
    const device: RouteParty = {
      key: await this.hostKeys.guardKeyOf(spec.context, address, spec.port),
      username: record.username,
      label: `${spec.host}:${spec.port}`,
      context: spec.context,
      address,
      port: spec.port,
    };
    const unclean: string[] = [];
    for (const party of [...jumps, device]) {
      // Bearer callers are exempt from device-account lockout (SPEC, authentication rule 5).
      const lockedOut = record.owner.startsWith('key:')
        ? false
        : await this.lockout.isLockedOut(party.username, party.key).catch(() => false);
      if (lockedOut) {
        throw new SvcError(
          ErrorCode.DEVICE_LOCKED_OUT,
          `user ${party.username} is locked out of ${party === device ? spec.host : party.label} after repeated failed logins`,
        );
      }
      const breakerVerdict = await this.breaker
        .admit(party.key, job.jobId)
        .catch((): BreakerVerdict => ({ allowed: true, probe: false, clean: true }));
      if (!breakerVerdict.allowed) {
        throw new SvcError(
          ErrorCode.CIRCUIT_OPEN,
          `circuit breaker open for ${party.label} until ${new Date(breakerVerdict.retryAtMs).toISOString()}`,
        );
      }
      if (!breakerVerdict.clean) unclean.push(party.key);
    }
    return { jumps, device, unclean };
  }

  /**
   * A session ran: every party whose breaker was not clean is healthy again. Bookkeeping only:
   * a store that cannot take it (an outage, a frozen node) is logged and never turns what the
   * device answered into a failure; the breaker stays as it was (a later success closes it).
   */
  async succeeded(admitted: Admitted, log: Logger): Promise<void> {
    for (const key of admitted.unclean) {
      await this.breaker
        .recordSuccess(key)
        .catch((err: unknown) => log.warn({ err }, 'breaker success not recorded'));
    }
  }

  /**
   * A job failed with `code` after the guards let it through. The failure is charged to the
   * party that caused it: the jump host being logged in to or forwarding, else (before the
   * device's handshake, on a route through jump hosts) the last jump host, which alone can say
   * what happened behind it; only failures of the device's own hop count against the device.
   * Only an unreachable party counts towards its breaker: a session the device ended after the
   * handshake (a `logout` job) says nothing about its health. A refused login costs the
   * account that was refused one attempt.
   */
  async failed(code: string, progress: Progress, admitted: Admitted, log: Logger): Promise<void> {
    const party = chargedParty(admitted, progress);
    const counts = !progress.reached && isConnectionFailure(code);
    if (!counts && code !== ErrorCode.AUTH_FAILED) return;
    // This very job may have pinned the key (first contact): charge the device it met. A store
    // that cannot say leaves the charge out: the job's own failure is what the device said.
    const key = await this.hostKeys
      .guardKeyOf(party.context, party.address, party.port)
      .catch((err: unknown) => {
        log.warn({ err }, 'failure not charged to the device: its key could not be read');
        return null;
      });
    if (key === null) return;
    if (counts) await this.breaker.recordFailure(key).catch(() => false);
    if (code === ErrorCode.AUTH_FAILED) {
      await this.lockout.recordFailure(party.username, key).catch(() => undefined);
    }
  }

  stop(): void {
    for (const mirror of this.mirrors) mirror.stop();
  }

  /**
   * The jump hosts of a job as session hops: each resolved once, held to the context's
   * reachability policy, checked against its own pinned host key, with its own credentials.
   */
  private async jumpHostsOf(
    spec: JobRecord['spec'],
    secrets: DeviceSecrets,
    log: Logger,
  ): Promise<SshHop[]> {
    const hops: SshHop[] = [];
    for (const [i, jump] of (spec.ssh?.jump_hosts ?? []).entries()) {
      const where = `jump host ${jump.host}:${jump.port}`;
      const jumpAddress = await resolveHost(jump.host);
      if (jumpAddress === null) {
        throw new SvcError(
          ErrorCode.HOST_UNREACHABLE,
          `host unreachable: the name of the ${where} did not resolve`,
        );
      }
      const verdict = this.reachable.check(spec.context, jump.host, jumpAddress);
      if (!verdict.allowed) {
        throw new SvcError(ErrorCode.ADDRESS_NOT_ALLOWED, `${where}: ${verdict.reason}`);
      }
      const own = secrets.jump_hosts?.[i];
      hops.push({
        host: jump.host,
        address: jumpAddress,
        port: jump.port,
        username: jump.username,
        password: own?.password ?? '',
        privateKey: own?.private_key ?? null,
        passphrase: own?.passphrase ?? null,
        verifyHostKey: hostKeyVerifier(
          this.hostKeys,
          this.hostKeyMode(spec.context),
          { context: spec.context, host: jump.host, address: jumpAddress, port: jump.port },
          log,
        ),
      });
    }
    return hops;
  }
}

/** The party a failure is charged to (see `DeviceAdmission.failed`). */
export function chargedParty(admitted: Admitted, progress: Progress): RouteParty {
  const { jumps, device } = admitted;
  // A warm session reached the device without passing any hop this time.
  if (progress.reached) return device;
  if (progress.jumpsPassed < jumps.length) return jumps[progress.jumpsPassed]!;
  if (jumps.length > 0) return jumps[jumps.length - 1]!;
  return device;
}

/** Failures that say the device is unreachable: they count towards its breaker. */
function isConnectionFailure(code: string): boolean {
  return [
    'CONNECTION_TIMEOUT',
    'CONNECTION_REFUSED',
    'HOST_UNREACHABLE',
    'SESSION_DROPPED',
  ].includes(code);
}
