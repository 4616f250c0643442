import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM sealing of secrets that cross NATS or rest in KV. A keyring holds one or more
 * 32-byte keys: the first seals, all open, so a key can be rotated by prepending the new one.
 * Sealed form: `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts).
 */
export class Sealer {
  readonly #keys: Map<string, Buffer>;
  readonly #current: string;

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('a keyring needs at least one key');
    this.#keys = new Map();
    for (const key of keys) {
      if (key.length !== 32) throw new Error('SVC_ENCRYPTION_KEY entries must be 32 bytes');
      this.#keys.set(keyId(key), key);
    }
    this.#current = keyId(keys[0]!);
  }

  /** Parses `SVC_ENCRYPTION_KEY`: comma-separated base64 (or 64-hex) keys, newest first. */
  static fromSetting(setting: string): Sealer {
    const keys = setting
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
      .map((s) => (/^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s, 'base64')));
    return new Sealer(keys);
  }

  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  seal(plain: unknown): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.#current)!, iv);
    const ct = Buffer.concat([cipher.update(JSON.stringify(plain), 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return ['v1', this.#current, b64(iv), b64(tag), b64(ct)].join('.');
  }

  open<T>(sealed: string): T {
    const [v, kid, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !kid || !iv || !tag || ct === undefined)
      throw new Error('malformed sealed value');
    const key = this.#keys.get(kid);
    if (!key) throw new Error('sealed with a key that is not in the keyring');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as T;
  }
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 8);
}

function b64(buf: Buffer): string {
  return buf.toString('base64url');
}

/**
 * The webhook URL of a job spec: sealed (`v1.…`, which no URL can start with) since webhook URLs
 * are treated as secrets, in clear in jobs queued before that. Null when the job has none.
 */
export function openWebhookUrl(sealer: Sealer, value: string | null): string | null {
  if (value === null || value === '') return null;
  return value.startsWith('v1.') ? sealer.open<string>(value) : value;
}
