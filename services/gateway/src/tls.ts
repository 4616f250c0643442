import { readFile } from 'node:fs/promises';
import { generate } from 'selfsigned';

export interface TlsMaterial {
  key: string;
  cert: string;
  selfSigned: boolean;
}

/** The configured certificate and key, or a self-signed pair made at start. */
export async function loadTls(certFile: string, keyFile: string): Promise<TlsMaterial> {
  if (certFile && keyFile) {
    return {
      cert: await readFile(certFile, 'utf8'),
      key: await readFile(keyFile, 'utf8'),
      selfSigned: false,
    };
  }
  if (certFile || keyFile) throw new Error('SVC_TLS_CERT and SVC_TLS_KEY must be given together');
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
