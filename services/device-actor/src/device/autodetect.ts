import { PLATFORMS, SvcError, ErrorCode, compilePattern } from '@svc/proto';
import { CliSession } from './drivers/cli-session.js';
import {
  BUILTIN_DRIVERS,
  ciscoLike,
  keepOutput,
  userDriverDescriptions,
  withLoginCredentials,
  type Driver,
  type EnableMode,
} from '@svc/drivers';
import { sessionOptionsOf, type DeviceJob } from './device-job.js';

/**
 * Platform fingerprinting over a separate, never pooled session: read the prompt, send a few
 * per-vendor probe commands (chosen by what the prompt looks like) and match their answers.
 */

/** Answer patterns, most specific first (XE and ASA output also says "Cisco IOS"). */
export const FINGERPRINTS: readonly { platform: string; pattern: RegExp }[] = [
  { platform: 'cisco_xr', pattern: /Cisco IOS XR Software|IOS-XR/ },
  { platform: 'cisco_nxos', pattern: /Cisco Nexus Operating System|NX-OS/ },
  // FTD's `show version` also prints the ASA engine's version line.
  { platform: 'cisco_ftd', pattern: /Cisco Firepower Threat Defense/ },
  { platform: 'cisco_asa', pattern: /Cisco Adaptive Security Appliance/ },
  { platform: 'cisco_xe', pattern: /Cisco IOS[ -]XE Software|IOS-XE/ },
  { platform: 'cisco_ios', pattern: /Cisco IOS Software|Cisco Internetwork Operating System/ },
  { platform: 'arista_eos', pattern: /Arista/ },
  { platform: 'juniper_junos', pattern: /JUNOS|Junos:/ },
  { platform: 'aruba_aoscx', pattern: /ArubaOS-CX|AOS-CX/ },
  { platform: 'hp_procurve', pattern: /Image stamp:.*\/code\/build/ },
  { platform: 'huawei_vrpv8', pattern: /VRP \(R\) software, Version 8\./ },
  { platform: 'huawei', pattern: /Huawei Versatile Routing Platform|VRP \(R\) software/ },
  { platform: 'paloalto_panos', pattern: /sw-version:|family: (?:vm|pa)/i },
  { platform: 'fortinet', pattern: /Version: Forti(?:Gate|OS)/ },
];

/** Last: a network OS built on Linux also answers `uname -a` like any Linux. */
const LINUX_FINGERPRINT = { platform: 'linux', pattern: /^Linux \S+ \d/m };

/** Fingerprints of the other descriptions (built in or user), in their order. */
function describedFingerprints(): { platform: string; probe: string; pattern: RegExp }[] {
  const listed = new Set([...FINGERPRINTS.map((f) => f.platform), 'linux']);
  return [...PLATFORMS.map((p) => BUILTIN_DRIVERS[p]), ...userDriverDescriptions()]
    .filter((d) => d.fingerprint !== undefined && !listed.has(d.platform))
    .map((d) => ({
      platform: d.platform,
      probe: d.fingerprint?.probe ?? '',
      pattern: compilePattern(d.fingerprint?.pattern ?? '', 'm'),
    }));
}

/** The platform whose fingerprint appears in `text`, if any. */
export function matchFingerprint(text: string): string | undefined {
  const all = [...FINGERPRINTS, ...describedFingerprints(), LINUX_FINGERPRINT];
  return all.find((f) => f.pattern.test(text))?.platform;
}

/** Probe commands in the order worth trying for a given prompt line. */
export function probesFor(prompt: string): readonly string[] {
  const p = prompt.trim();
  if (/^<[^>]+>$/.test(p)) return ['display version'];
  if (/ [#$]$/.test(p)) return ['get system status', 'show version', 'uname -a'];
  if (/^[\w.-]+@[\w.()-]+>$/.test(p)) return ['show version', 'show system info'];
  // OmniSwitch AOS and ScreenOS end in `->`; their `show version` answers an `ERROR:` that
  // looks like a user-exec refusal, and they have no enable to try.
  if (/->$/.test(p)) return ['show system', 'get system'];
  // `user@host:~$` is also EdgeOS and VyOS, whose shell answers `uname -a` like any Linux:
  // their own `show version` first.
  if (/^[\w.-]+@[\w.-]+:[^\s]*\$$/.test(p)) return ['show version', 'uname -a'];
  if (/\$$/.test(p)) return ['uname -a', 'show version'];
  // A prompt of no known shape: every probe, then those of the other descriptions.
  const all = [
    'show version',
    'show system info',
    'get system status',
    'display version',
    'uname -a',
  ];
  const more = describedFingerprints()
    .map((f) => f.probe)
    .filter((probe, i, list) => !all.includes(probe) && list.indexOf(probe) === i);
  return [...all, ...more];
}

/**
 * An answer that says the command was refused rather than unknown to this vendor: devices in
 * user-exec mode answer privileged commands this way (`% Invalid input`, ProCurve `Invalid
 * input: version`, `% Permission denied`, `Command authorization failed`).
 */
const REFUSAL =
  /^\s*(?:%|Invalid input|Unknown command|Unrecognized command|ERROR:|Error:)|not authori[sz]ed|authorization failed|permission denied|privilege/im;

/** True when `out` (the first lines of a probe's answer) is a refusal. */
export function isRefusal(out: string): boolean {
  const head = out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 4)
    .join('\n');
  return head === '' || REFUSAL.test(head);
}

/** The enable of the CLIs that log in at `>` (IOS, ASA, EOS, ProCurve asks a user name too). */
const probeEnable: EnableMode = {
  command: 'enable',
  isEnabled: ciscoLike.isEnabled,
  passwordPrompt: /[Pp]assword:\s*$/,
  usernamePrompt: /Username:\s*$/i,
};

/** A permissive driver: any prompt, no modes. Only used to run the probes. */
const probeDriver: Driver = {
  platform: 'linux',
  loginPrompt: /[>#$%\]]\s*$/,
  loginConfirmations: [
    { pattern: /Press any key to continue/i, answer: '\n' },
    { pattern: /Ctrl-Y to begin/i, answer: '\x19' },
    // In-band logins (Cisco Sx300, PowerConnect) ask again inside the shell.
    { pattern: /^User ?Name:\s*$/i, answer: '{username}\n' },
    { pattern: /^Password:\s*$/i, answer: '{password}\n' },
  ],
  // SmartAX asks `{ <cr>||<K> }:` before answering a command.
  pagers: [{ pattern: /^\s*\{ <cr>[^}]*\}:\s*$/, answer: '\n' }],
  // Without `* ` (EXOS unsaved) and `.N` (EXOS command counter): the rest stays per device.
  basePrompt: (line) =>
    line
      .trim()
      .replace(/^\* /, '')
      .replace(/[>#$%\]]$/, '')
      .replace(/^[<[]/, '')
      .trim()
      .replace(/\s*\([^)]*\)$/, '')
      .replace(/:.*$/, '')
      .replace(/\.\d+$/, ''),
  promptPattern: (b) => new RegExp(`^[<[]?${b}[^\\n]*[>#$%\\]]\\s*$`),
  enable: null,
  pagingOff: [],
  config: { enter: null, exit: [], abort: [], isConfig: () => false, exitConfirmations: [] },
  commit: null,
  save: 'none',
  errorPatterns: [],
  cleanConfigOutput: keepOutput,
};

/**
 * Fingerprints the job's device. Connection failures keep their own code (AUTH_FAILED, ...);
 * anything else that prevents a decision is PLATFORM_AUTODETECT_FAILED.
 */
export async function autodetectPlatform(job: DeviceJob): Promise<string> {
  const cli = await CliSession.open(
    withLoginCredentials(probeDriver, job.username, job.password),
    sessionOptionsOf(job),
    job.signal,
  );
  const unbind = cli.bindSignal(job.signal);
  try {
    const seen: string[] = [];
    const ask = async (probe: string): Promise<string> => {
      try {
        return await cli.command(probe, { timeoutMs: job.readTimeoutMs });
      } catch (err) {
        if (job.signal.aborted) throw err;
        throw new SvcError(
          ErrorCode.PLATFORM_AUTODETECT_FAILED,
          `platform autodetect failed: no answer to "${probe}" (${err instanceof Error ? err.message : String(err)})`,
        );
      }
    };
    let enabled = false;
    for (const probe of probesFor(cli.prompt)) {
      let out = await ask(probe);
      seen.push(probe);
      let found = matchFingerprint(out);
      if (found !== undefined) return found;
      // At a user-exec `>` prompt some images refuse `show version` until enable: enter it
      // with the job's secret, as the job itself will, and ask again.
      if (!enabled && isRefusal(out) && /^[\w./:-]+>$/.test(cli.prompt.trim())) {
        enabled = true;
        try {
          await cli.enable(
            job.username,
            job.enable ?? job.password,
            job.readTimeoutMs,
            probeEnable,
          );
        } catch (err) {
          // No enable on this device: the next probe may still tell.
          if (!(err instanceof SvcError) || err.code !== ErrorCode.ENABLE_REFUSED) throw err;
        }
        if (probeEnable.isEnabled(cli.prompt)) {
          out = await ask(probe);
          seen.push(`${probe} (after enable)`);
          found = matchFingerprint(out);
          if (found !== undefined) return found;
        }
      }
    }
    throw new SvcError(
      ErrorCode.PLATFORM_AUTODETECT_FAILED,
      `platform autodetect failed: no known fingerprint in the answers to ${seen.map((s) => `"${s}"`).join(', ')}`,
    );
  } finally {
    unbind();
    void cli.close().catch(() => undefined);
  }
}
