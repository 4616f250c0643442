import { Type, type Static } from 'typebox';
import { ConfigError } from './errors.js';
import { DeviceText, MAX_SECRET_LENGTH, NullableDeviceText } from './device-input.js';

/**
 * SSH profiles: which algorithms a job's connections offer, how they authenticate (password,
 * private key) and through which jump hosts (bastions) they reach the device. The request field
 * is `ssh`; the context's default profile is the setting `SSH_PROFILE`.
 */

/** `default`: the SSH library's modern defaults; `legacy`: those plus the legacy algorithms. */
export const SshProfile = { default: 'default', legacy: 'legacy' } as const;
export type SshProfile = (typeof SshProfile)[keyof typeof SshProfile];
const PROFILES: readonly SshProfile[] = Object.values(SshProfile);

/** The algorithm kinds a job may set, named as the SSH library names them. */
export const SSH_ALGORITHM_KINDS = ['kex', 'cipher', 'serverHostKey', 'hmac'] as const;
export type SshAlgorithmKind = (typeof SSH_ALGORITHM_KINDS)[number];
export type SshAlgorithmLists = Partial<Record<SshAlgorithmKind, string[]>>;

/**
 * What the `legacy` profile offers after the defaults (so a modern device still negotiates a
 * modern algorithm): what installed switches and routers of the 2000s and early 2010s speak.
 */
export const LEGACY_ALGORITHMS: Readonly<Record<SshAlgorithmKind, readonly string[]>> = {
  kex: [
    'diffie-hellman-group14-sha1',
    'diffie-hellman-group-exchange-sha1',
    'diffie-hellman-group1-sha1',
  ],
  serverHostKey: ['ssh-rsa', 'ssh-dss'],
  cipher: ['aes128-cbc', 'aes192-cbc', 'aes256-cbc', '3des-cbc'],
  hmac: ['hmac-sha1', 'hmac-sha1-96', 'hmac-md5', 'hmac-md5-96'],
};

/**
 * Every algorithm name a job may list, per kind: the names the SSH library (ssh2 1.17) supports.
 * A device-actor test checks this against the library, so an upgrade that drops one is seen.
 */
export const SSH_ALGORITHM_NAMES: Readonly<Record<SshAlgorithmKind, readonly string[]>> = {
  kex: [
    'curve25519-sha256',
    'curve25519-sha256@libssh.org',
    'ecdh-sha2-nistp256',
    'ecdh-sha2-nistp384',
    'ecdh-sha2-nistp521',
    'diffie-hellman-group-exchange-sha256',
    'diffie-hellman-group14-sha256',
    'diffie-hellman-group15-sha512',
    'diffie-hellman-group16-sha512',
    'diffie-hellman-group17-sha512',
    'diffie-hellman-group18-sha512',
    'diffie-hellman-group-exchange-sha1',
    'diffie-hellman-group14-sha1',
    'diffie-hellman-group1-sha1',
  ],
  serverHostKey: [
    'ssh-ed25519',
    'ecdsa-sha2-nistp256',
    'ecdsa-sha2-nistp384',
    'ecdsa-sha2-nistp521',
    'rsa-sha2-512',
    'rsa-sha2-256',
    'ssh-rsa',
    'ssh-dss',
  ],
  cipher: [
    'chacha20-poly1305@openssh.com',
    'aes128-gcm@openssh.com',
    'aes256-gcm@openssh.com',
    'aes128-ctr',
    'aes192-ctr',
    'aes256-ctr',
    'aes256-cbc',
    'aes192-cbc',
    'aes128-cbc',
    '3des-cbc',
  ],
  hmac: [
    'hmac-sha2-256-etm@openssh.com',
    'hmac-sha2-512-etm@openssh.com',
    'hmac-sha1-etm@openssh.com',
    'hmac-sha2-256',
    'hmac-sha2-512',
    'hmac-sha1',
    'hmac-md5',
    'hmac-sha2-256-96',
    'hmac-sha2-512-96',
    'hmac-sha1-96',
    'hmac-md5-96',
  ],
};

/** Most jump hosts in front of one device. */
export const MAX_JUMP_HOSTS = 4;
/** Longest private key text, in characters (a 16384-bit RSA key in PEM is about 12 000). */
export const MAX_PRIVATE_KEY_LENGTH = 16_384;

export const SshSettings = {
  SSH_PROFILE: Type.Array(Type.String(), {
    default: ['default'],
    description:
      "SSH profile per context, comma-separated `[context=]profile`: `default` (the SSH library's modern algorithms) or `legacy` (those plus diffie-hellman-group14-sha1, diffie-hellman-group1-sha1, ssh-rsa, aes128-cbc, 3des-cbc, hmac-sha1 and the like, for old devices). A job's `ssh.profile` overrides it. An entry without a context is the default.",
  }),
};

/** The profile of each context from SSH_PROFILE; throws ConfigError listing bad entries. */
export function sshProfiles(entries: readonly string[]): (context: string) => SshProfile {
  const problems: string[] = [];
  const byContext = new Map<string, SshProfile>();
  let fallback: SshProfile = SshProfile.default;
  for (const raw of entries) {
    const m = /^(?:([A-Za-z0-9_-]+)=)?([a-z]+)$/.exec(raw.trim());
    const profile = m?.[2] as SshProfile | undefined;
    if (!m || profile === undefined || !PROFILES.includes(profile)) {
      problems.push(`SSH_PROFILE: ${JSON.stringify(raw)} is not [context=]default|legacy`);
      continue;
    }
    if (m[1] !== undefined) byContext.set(m[1], profile);
    else fallback = profile;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return (context) => byContext.get(context) ?? fallback;
}

/** A PEM or OpenSSH private key: printable ASCII lines, never sent to a device's CLI. */
const PRIVATE_KEY_PATTERN = '^[\\u0020-\\u007e\\r\\n]*$';

const PrivateKey = (description: string) =>
  Type.Union(
    [
      Type.String({
        pattern: PRIVATE_KEY_PATTERN,
        maxLength: MAX_PRIVATE_KEY_LENGTH,
        description,
      }),
      Type.Null(),
    ],
    { description },
  );

const Passphrase = NullableDeviceText(
  'Passphrase of the encrypted private_key. Sealed like passwords.',
  MAX_SECRET_LENGTH,
);

const AlgorithmList = (kind: string) =>
  Type.Array(Type.String({ pattern: '^[A-Za-z0-9@._+-]{1,64}$' }), {
    minItems: 1,
    maxItems: 32,
    description: `${kind} algorithms offered, in order of preference; replaces the profile's list.`,
  });

/** One jump host as a request names it. */
export const JumpHostRequest = Type.Object(
  {
    host: Type.String({ description: 'IPv4, IPv6 or RFC 1123 host name of the jump host.' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Default 22.' })),
    username: DeviceText('User on the jump host.', MAX_SECRET_LENGTH),
    password: Type.Optional(
      NullableDeviceText('Password on the jump host. Sealed.', MAX_SECRET_LENGTH),
    ),
    private_key: Type.Optional(PrivateKey('Private key for the jump host (PEM/OpenSSH). Sealed.')),
    passphrase: Type.Optional(Passphrase),
  },
  { additionalProperties: false },
);

/** The `ssh` field of a submission. */
export const SshRequestOptions = Type.Object(
  {
    profile: Type.Optional(
      Type.Enum(PROFILES, {
        description: "default or legacy. Default: the context's SSH_PROFILE.",
      }),
    ),
    algorithms: Type.Optional(
      Type.Object(
        {
          kex: Type.Optional(AlgorithmList('Key exchange')),
          cipher: Type.Optional(AlgorithmList('Cipher')),
          serverHostKey: Type.Optional(AlgorithmList('Host key')),
          hmac: Type.Optional(AlgorithmList('MAC')),
        },
        { additionalProperties: false },
      ),
    ),
    private_key: Type.Optional(
      PrivateKey(
        'Private key (PEM or OpenSSH format) for public-key login to the device; the password becomes optional. Sealed like passwords, never stored or logged.',
      ),
    ),
    passphrase: Type.Optional(Passphrase),
    jump_hosts: Type.Optional(
      Type.Array(JumpHostRequest, {
        maxItems: MAX_JUMP_HOSTS,
        description:
          'Jump hosts (bastions) in order: the first is reached directly, each next one and then the device through the one before. Each has its own credentials and host-key trust.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'SSH profile of the job: algorithms, key login, jump hosts.',
  },
);
export type SshRequestOptions = Static<typeof SshRequestOptions>;

/**
 * The `ssh` field of a replay: the secrets of the original job's SSH profile, which are never
 * kept (`jump_hosts` in the order of the job's jump hosts, one entry each).
 */
export const SshReplaySecrets = Type.Object(
  {
    private_key: Type.Optional(PrivateKey('Private key for the device (PEM/OpenSSH).')),
    passphrase: Type.Optional(Passphrase),
    jump_hosts: Type.Optional(
      Type.Array(
        Type.Object(
          {
            password: Type.Optional(
              NullableDeviceText('Password on the jump host.', MAX_SECRET_LENGTH),
            ),
            private_key: Type.Optional(PrivateKey('Private key for the jump host.')),
            passphrase: Type.Optional(Passphrase),
          },
          { additionalProperties: false },
        ),
        { maxItems: MAX_JUMP_HOSTS },
      ),
    ),
  },
  {
    additionalProperties: false,
    description: "Secrets of the job's SSH profile: key, passphrase, jump-host credentials.",
  },
);
export type SshReplaySecrets = Static<typeof SshReplaySecrets>;

/**
 * The sealed SSH secrets of a replay of a job with `spec`, or the problems (located under
 * `body.ssh`): one credential entry per jump host of the job, each with a password or a key.
 */
export function replaySshSecrets(
  spec: SshSpec | undefined,
  given: SshReplaySecrets | undefined,
): {
  secrets: {
    private_key: string | null;
    passphrase: string | null;
    jump_hosts?: JumpHostSecrets[];
  };
  issues: { loc: (string | number)[]; msg: string; type: string }[];
} {
  const issues: { loc: (string | number)[]; msg: string; type: string }[] = [];
  const hops = spec?.jump_hosts ?? [];
  const creds = given?.jump_hosts ?? [];
  if (creds.length !== hops.length) {
    issues.push({
      loc: ['body', 'ssh', 'jump_hosts'],
      msg: `the job has ${hops.length} jump host(s): give one credential entry for each, in order`,
      type: 'value_error',
    });
  }
  const jumpHosts = creds.map((c, i) => {
    if (c.password == null && c.private_key == null) {
      issues.push({
        loc: ['body', 'ssh', 'jump_hosts', i],
        msg: 'a jump host needs password or private_key',
        type: 'value_error',
      });
    }
    return {
      password: c.password ?? null,
      private_key: c.private_key ?? null,
      passphrase: c.passphrase ?? null,
    };
  });
  return {
    secrets: {
      private_key: given?.private_key ?? null,
      passphrase: given?.passphrase ?? null,
      ...(jumpHosts.length > 0 ? { jump_hosts: jumpHosts } : {}),
    },
    issues,
  };
}

/** A jump host in a job spec: where, and as whom (its secrets are sealed). */
export const JumpHostSpec = Type.Object(
  {
    host: Type.String(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    username: Type.String(),
  },
  { additionalProperties: false },
);
export type JumpHostSpec = Static<typeof JumpHostSpec>;

/** The non-secret part of a job's `ssh` field, kept in the job record. */
export const SshSpec = Type.Object(
  {
    /** null: the context's SSH_PROFILE when the job runs. */
    profile: Type.Union([Type.Enum(PROFILES), Type.Null()]),
    algorithms: Type.Union([
      Type.Object(
        {
          kex: Type.Optional(Type.Array(Type.String())),
          cipher: Type.Optional(Type.Array(Type.String())),
          serverHostKey: Type.Optional(Type.Array(Type.String())),
          hmac: Type.Optional(Type.Array(Type.String())),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    jump_hosts: Type.Array(JumpHostSpec),
  },
  { additionalProperties: false },
);
export type SshSpec = Static<typeof SshSpec>;

/** The sealed credentials of one jump host. */
export interface JumpHostSecrets {
  password: string | null;
  private_key: string | null;
  passphrase: string | null;
}

/**
 * The algorithm lists a connection offers, for the SSH library: a job's explicit lists replace
 * the profile's; the legacy profile appends {@link LEGACY_ALGORITHMS} to the library defaults.
 * Absent kinds keep the library defaults.
 */
export function algorithmsFor(
  profile: SshProfile,
  explicit: SshAlgorithmLists | null,
): Partial<Record<SshAlgorithmKind, string[] | { append: string[] }>> {
  const out: Partial<Record<SshAlgorithmKind, string[] | { append: string[] }>> = {};
  for (const kind of SSH_ALGORITHM_KINDS) {
    const own = explicit?.[kind];
    if (own !== undefined) out[kind] = [...own];
    else if (profile === SshProfile.legacy) out[kind] = { append: [...LEGACY_ALGORITHMS[kind]] };
  }
  return out;
}
