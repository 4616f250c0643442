import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { startDevice, DEFAULT_PASSWORD, DEFAULT_USERNAME } from './device-sim.js';
import { generateHostKey } from './host-key.js';

/**
 * `npm run devsim`: one simulated device for trying the service by hand. Environment:
 * DEVSIM_PLATFORM (default cisco_ios), DEVSIM_PORT (default 2222), DEVSIM_USERNAME,
 * DEVSIM_PASSWORD, DEVSIM_ENABLE (default: the password, so that a Basic request, whose enable
 * secret defaults to its password, works as it is), DEVSIM_HOST_KEY_FILE (default
 * `.svc-data/devsim-host-key`: the key survives restarts, so that the service's pinned host key
 * (HOST_KEY_POLICY tofu) still matches). Runs until SIGINT/SIGTERM.
 */
const platform = process.env['DEVSIM_PLATFORM'] ?? 'cisco_ios';
const port = Number(process.env['DEVSIM_PORT'] ?? '2222');
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`DEVSIM_PORT must be a port number, got ${process.env['DEVSIM_PORT']}`);
  process.exit(2);
}
const password = process.env['DEVSIM_PASSWORD'] ?? DEFAULT_PASSWORD;
const keyFile = process.env['DEVSIM_HOST_KEY_FILE'] ?? '.svc-data/devsim-host-key';
if (!existsSync(keyFile)) {
  mkdirSync(dirname(keyFile), { recursive: true });
  writeFileSync(keyFile, generateHostKey(), { mode: 0o600 });
}
const device = await startDevice({
  hostKey: readFileSync(keyFile, 'utf8'),
  platform,
  host: '127.0.0.1',
  port,
  username: process.env['DEVSIM_USERNAME'] ?? DEFAULT_USERNAME,
  password,
  enable: process.env['DEVSIM_ENABLE'] ?? password,
});
// The password is printed on purpose: this is a local test device with a demo credential.
console.log(`host: ${device.host}`);
console.log(`port: ${device.port}`);
console.log(`platform: ${device.platform}`);
console.log(`username: ${device.username}`);
console.log(`password: ${device.password}`);
console.log(`host key: ${device.hostPublicKey}`);
const shutdown = (): void => {
  device.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
