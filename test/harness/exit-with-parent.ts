// Loaded (`node --import`) into every service that ServiceProcess starts, tests' and the
// benchmark's. The service's standard input is a pipe from the process that started it; its end
// means that process is gone without stopping the service (a test file killed at its timeout
// runs no cleanup), so the service stops as on SIGTERM (the launcher stops its nats-server too)
// instead of living on, reconnecting to a server that went with it. No timer: the end of the
// pipe is the signal.
import { isMainThread } from 'node:worker_threads';

// Worker threads inherit `--import` and run this too, but a worker's standard input is a stream
// of its own that ends at once: read there, it stopped the service as soon as one started (an
// actor host's parser thread, at its first structured job).
if (isMainThread) {
  process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
  process.stdin.resume();
  // The pipe alone must not keep a service running that would otherwise stop.
  (process.stdin as { unref?: () => void }).unref?.();
}
