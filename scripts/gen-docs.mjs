#!/usr/bin/env node
// Writes the generated parts of docs/ from the one place each fact lives: error codes from
// proto, settings from each service's config schema. `--check` fails when docs/ is stale
// (a test runs it), so the documents and the code never drift.
import { readFileSync, writeFileSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const { ERROR_CODES, SharedSettings, PLATFORMS } = await import(
  new URL('proto/dist/src/mod.js', root)
);
const { BUILTIN_DRIVERS } = await import(new URL('drivers/dist/src/mod.js', root));
const services = {
  gateway: (await import(new URL('services/gateway/dist/src/config.js', root))).GatewayConfig,
  dispatcher: (await import(new URL('services/dispatcher/dist/src/config.js', root)))
    .DispatcherConfig,
  'device-actor': (await import(new URL('services/device-actor/dist/src/config.js', root)))
    .DeviceActorConfig,
  reaper: (await import(new URL('services/reaper/dist/src/config.js', root))).ReaperConfig,
};

const REMEDY = {
  CONNECTION_TIMEOUT: 'Check reachability from the actor host and conn_timeout; retry later.',
  CONNECTION_REFUSED: 'Check the SSH port and that SSH is enabled on the device.',
  HOST_UNREACHABLE: 'Check the host name (DNS) and routing from the actor host.',
  AUTH_FAILED: 'Check username and password; repeated failures lock the user out of the device.',
  ENABLE_REFUSED:
    "The device answered every enable form of the platform without asking for a password (the error holds its answers): check the user's privilege level on the device, or describe the image's enable form in a driver (enable.alternatives).",
  READ_TIMEOUT: 'Raise read_timeout, or give expect_string for output that ends without a prompt.',
  SESSION_DROPPED:
    'The device closed the session; check its logs (idle or exec timeouts, reloads).',
  COMMAND_ERROR: 'The device rejected a command; the error text holds its message.',
  PLATFORM_AUTODETECT_FAILED: 'Give the platform explicitly.',
  CIRCUIT_OPEN: 'Recent connections to the device kept failing; wait for the breaker to close.',
  DEVICE_LOCKED_OUT: 'Too many failed logins; wait for the lockout window to pass.',
  JOB_TIMEOUT: 'The job ran longer than JOB_TIMEOUT; split it or raise the limit.',
  WORKER_LOST: 'The actor host died mid-job; check whether the commands ran before retrying.',
  NOT_ENQUEUED:
    'The job never ran; submit it again (under a new X-Idempotency-Key: the old one names this job).',
  CANCELLED: 'The submitter cancelled the job.',
  TEMPLATE_ERROR: 'Fix the TextFSM/TTP template; the error text names the problem.',
  ADDRESS_NOT_ALLOWED:
    'The device address is refused by DEVICE_NETWORKS_ALLOW/DENY of the context (see security.md).',
  HOST_KEY_MISMATCH:
    'Verify the device key out of band; if it really changed, an admin forgets or reloads it (DELETE/PUT /v2/host-keys/...).',
  HOST_KEY_UNKNOWN: 'An admin loads the device key (PUT /v2/host-keys/...) for this context.',
  SSH_NEGOTIATION_FAILED:
    'Compare the two offers in the error text; an old device needs ssh.profile "legacy" (or SSH_PROFILE for its context) or explicit ssh.algorithms (see ssh.md).',
  SSH_KEY_INVALID:
    'Give the private key in PEM or OpenSSH format with its passphrase if it is encrypted; the error names the hop.',
  RESULT_TOO_LARGE:
    'Ask for less output (narrower show commands, fewer per job), or raise SVC_MAX_RESULT_BYTES on the actor hosts (and size the svc-results bucket, see operations.md).',
  INTERNAL: 'A service fault; retry, and report it if it persists.',
};

function errorsTable() {
  const rows = Object.entries(ERROR_CODES).map(
    ([code, info]) =>
      `| \`${code}\` | ${info.meaning} | ${info.retryable} | ${REMEDY[code] ?? ''} |`,
  );
  return ['| error_code | meaning | error_retryable | remedy |', '|---|---|---|---|', ...rows].join(
    '\n',
  );
}

function settingsTable(schema) {
  const rows = Object.entries(schema.properties).map(([name, p]) => {
    const def = Array.isArray(p.default) ? p.default.join(',') : String(p.default ?? '');
    const shared = name in SharedSettings ? ' (shared)' : '';
    return `| \`${name}\` | ${p.type}${p.items ? ' list' : ''} | \`${def}\` | ${p.description ?? ''}${shared} |`;
  });
  return ['| variable | type | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** Per platform: prompt hint, enable forms, the exit that brings a session back, what is kept. */
function sessionStateTable() {
  const code = (text) => `\`${text.replaceAll('|', '\\|')}\``;
  const rows = PLATFORMS.map((p) => {
    const d = BUILTIN_DRIVERS[p];
    const enable =
      d.enable === null
        ? 'none'
        : [d.enable.command, ...(d.enable.alternatives ?? [])].map(code).join(' then ');
    const back =
      d.config.prompt === null
        ? 'none (no configuration mode): another prompt closes the session'
        : d.config.abort.map(code).join(' + ');
    const applied =
      d.config.enter === null && d.config.prompt === null
        ? 'lines before the failure ran at the prompt and stay applied'
        : d.commit?.required
          ? 'nothing applied: no commit was reached, the change is discarded'
          : d.commit
            ? 'lines before the failure are discarded by the abort unless committed'
            : 'lines before the failure stay applied (no commit on the platform)';
    return `| \`${p}\` | ${code(d.prompt.any)} | ${enable} | ${back} | ${applied} |`;
  });
  return [
    '| platform | prompt shape (a hint: another shape is learned) | enable forms, in order | exit that brings a session back | config job failing midway |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

const generated = {
  'docs/errors.md': errorsTable(),
  'docs/devices.md': sessionStateTable(),
  'docs/configuration.md': Object.entries(services)
    .map(([name, schema]) => `### ${name}\n\n${settingsTable(schema)}`)
    .join('\n\n'),
};

const BEGIN = '<!-- generated: begin (npm run docs) -->';
const END = '<!-- generated: end -->';
let stale = [];
for (const [file, table] of Object.entries(generated)) {
  const url = new URL(file, root);
  const text = readFileSync(url, 'utf8');
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < 0) throw new Error(`${file} lacks the generated markers`);
  const next = `${text.slice(0, start + BEGIN.length)}\n${table}\n${text.slice(end)}`;
  if (next !== text) {
    if (process.argv.includes('--check')) stale.push(file);
    else writeFileSync(url, next);
  }
}
if (stale.length > 0) {
  console.error(`stale generated docs: ${stale.join(', ')} (run npm run docs)`);
  process.exit(1);
}
