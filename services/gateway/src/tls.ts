import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TLS_CERT_FILE, TLS_DIR } from '@svc/proto';
import { type Logger } from '@svc/telemetry';
import { generate } from 'selfsigned';

export interface TlsMaterial {
  key: string;
  cert: string;
  selfSigned: boolean;
}

/**
 * The configured certificate and key; else the self-signed pair kept in `<dataDir>/tls/`
 * (generated on the first start, reused afterwards so that clients that pinned it keep
 * working). When the directory cannot be written, a pair made for this start only.
 */
export async function loadTls(
  certFile: string,
  keyFile: string,
  dataDir: string,
  log: Logger,
): Promise<TlsMaterial> {
  if (certFile && keyFile) {
    return {
      cert: await readFile(certFile, 'utf8'),
      key: await readFile(keyFile, 'utf8'),
      selfSigned: false,
    };
  }
  if (certFile || keyFile) throw new Error('SVC_TLS_CERT and SVC_TLS_KEY must be given together');
  if (!dataDir) return generatePair();
  const dir = join(dataDir, TLS_DIR);
  const stored = await readPair(dir);
  if (stored) return stored;
  const pair = await generatePair();
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    // Written whole into a private temporary directory, then renamed into place: another
    // gateway starting on the same directory sees both files or none, and one pair wins.
    const tmp = join(dataDir, `.tls-${randomBytes(6).toString('hex')}`);
    await mkdir(tmp, { mode: 0o700 });
    await writeFile(join(tmp, 'key.pem'), pair.key, { mode: 0o600 });
    await writeFile(join(tmp, TLS_CERT_FILE), pair.cert, { mode: 0o644 });
    await chmod(join(tmp, 'key.pem'), 0o600); // whatever the umask
    try {
      await rename(tmp, dir);
    } catch {
      await rm(tmp, { recursive: true, force: true });
    }
    return (await readPair(dir)) ?? pair;
  } catch (err) {
    log.warn({ err, dir }, 'could not keep the self-signed certificate; it changes at each start');
    return pair;
  }
}

async function readPair(dir: string): Promise<TlsMaterial | null> {
  try {
    const [cert, key] = await Promise.all([
      readFile(join(dir, TLS_CERT_FILE), 'utf8'),
      readFile(join(dir, 'key.pem'), 'utf8'),
    ]);
    return { cert, key, selfSigned: true };
  } catch {
    return null;
  }
}

async function generatePair(): Promise<TlsMaterial> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    notAfterDate: new Date(Date.now() + 365 * 86_400_000),
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert, selfSigned: true };
}
