import { generateKeyPairSync, randomBytes } from 'node:crypto';
import ssh2 from 'ssh2';

/**
 * A fresh ed25519 host key in the OpenSSH private key format. Node's crypto can generate the
 * key but exports only PKCS#8, which ssh2 1.17 does not parse for ed25519; the OpenSSH
 * container is simple enough to write out here (PROTOCOL.key in the OpenSSH sources).
 */
export function generateHostKey(): string {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const priv = privateKey.export({ format: 'jwk' });
  const pub = publicKey.export({ format: 'jwk' });
  if (typeof priv.d !== 'string' || typeof pub.x !== 'string')
    throw new Error('ed25519 export failed');
  const seed = Buffer.from(priv.d, 'base64url');
  const pubRaw = Buffer.from(pub.x, 'base64url');
  const keyType = Buffer.from('ssh-ed25519');
  const pubBlob = Buffer.concat([sshString(keyType), sshString(pubRaw)]);
  const check = randomBytes(4);
  let privBlock = Buffer.concat([
    check,
    check,
    sshString(keyType),
    sshString(pubRaw),
    sshString(Buffer.concat([seed, pubRaw])),
    sshString(Buffer.from('svc-devsim')),
  ]);
  const pad: number[] = [];
  for (let i = 1; (privBlock.length + pad.length) % 8 !== 0; i++) pad.push(i);
  privBlock = Buffer.concat([privBlock, Buffer.from(pad)]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString(Buffer.from('none')),
    sshString(Buffer.from('none')),
    sshString(Buffer.alloc(0)),
    uint32(1),
    sshString(pubBlob),
    sshString(privBlock),
  ]);
  const b64 = body.toString('base64').replace(/.{1,70}/g, '$&\n');
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}-----END OPENSSH PRIVATE KEY-----\n`;
}

/**
 * A fresh 2048-bit RSA key as PKCS#1 PEM (what ssh2 and old devices read): the host key of a
 * legacy-only device (`ssh-rsa`), or a client key. With `passphrase`, the PEM is encrypted
 * (AES-128-CBC, the OpenSSL traditional format `ssh-keygen -m PEM` writes).
 */
export function generateRsaHostKey(passphrase?: string): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey
    .export({
      type: 'pkcs1',
      format: 'pem',
      ...(passphrase !== undefined ? { cipher: 'aes-128-cbc', passphrase } : {}),
    })
    .toString();
}

/** The OpenSSH public line (`ssh-ed25519 AAAA…`) of a private key, optionally encrypted. */
export function publicKeyOf(privateKey: string, passphrase?: string): string {
  const parsed = ssh2.utils.parseKey(privateKey, passphrase);
  if (parsed instanceof Error) throw parsed;
  const key = Array.isArray(parsed) ? (parsed[0] as ssh2.ParsedKey) : parsed;
  return `${key.type} ${key.getPublicSSH().toString('base64')}`;
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function sshString(data: Buffer): Buffer {
  return Buffer.concat([uint32(data.length), data]);
}
