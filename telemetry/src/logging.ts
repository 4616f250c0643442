import { pino, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import { activeTraceIds } from './tracing.js';

/**
 * Paths pino removes from every log line. Secrets must never be logged; this is the last line
 * of defence, not the first (code logs ids and sizes, never payloads).
 */
export const REDACT_PATHS = [
  'password',
  'enable',
  'secret',
  'token',
  'authorization',
  '*.password',
  '*.enable',
  '*.secret',
  '*.webhook_secret',
  '*.token',
  '*.authorization',
  'req.headers.authorization',
  '*.headers.authorization',
];

const LEVELS: Record<string, string> = {
  DEBUG: 'debug',
  INFO: 'info',
  WARNING: 'warn',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * The root logger of a process: JSON lines with timestamp, level (INFO, DEBUG, WARNING, ERROR as
 * the specification names them), logger and message. A line written while a span is active (a
 * request, a job) carries its `trace_id` and `span_id`, so logs and traces join up.
 */
export function createLogger(
  service: string,
  level = 'INFO',
  destination?: pino.DestinationStream,
  loggerName = `svc.${service}`,
): Logger {
  const options: LoggerOptions = {
    level: LEVELS[level.toUpperCase()] ?? 'info',
    base: { service, logger: loggerName },
    messageKey: 'message',
    timestamp: () => `,"timestamp":"${new Date().toISOString()}"`,
    formatters: {
      level: (label) => ({ level: label === 'warn' ? 'WARNING' : label.toUpperCase() }),
    },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    mixin: activeTraceIds,
  };
  const log = destination
    ? pino(options, destination)
    : prettyWanted()
      ? pino(options, prettyStream())
      : pino(options);
  origins.set(log, { service, level, destination });
  return log;
}

/**
 * LOG_FORMAT: `json`, `pretty`, or empty for pretty on a terminal and JSON otherwise (piped,
 * collected by a container runtime).
 */
function prettyWanted(): boolean {
  const format = (process.env['LOG_FORMAT'] ?? '').toLowerCase();
  if (format === 'json') return false;
  if (format === 'pretty') return true;
  return process.stdout.isTTY === true;
}

function prettyStream(): pino.DestinationStream {
  return pretty({
    messageKey: 'message',
    // The level is already a name (INFO, WARNING): shown as it is.
    customPrettifiers: { level: (level) => (typeof level === 'string' ? level : '').padEnd(7) },
    ignore: 'pid,hostname,service,logger',
    translateTime: 'SYS:HH:MM:ss.l',
    timestampKey: 'timestamp',
    messageFormat: '{logger}: {message}',
    sync: true,
  });
}

/**
 * Where audit lines go on stdout in JSON mode: buffered (up to 4 KiB, at most
 * AUDIT_FLUSH_MS old) and written without blocking, so a busy process makes one write for many
 * lines instead of one per line. One buffer per process, shared by its services' audit logs (the
 * launcher runs four). pino flushes it synchronously when the process exits (a graceful stop
 * ends in `process.exit`). Undefined when lines are pretty-printed (a terminal: written at once).
 */
export function bufferedStdout(): pino.DestinationStream | undefined {
  if (prettyWanted()) return undefined;
  return (sharedStdout ??= flushedWithin(
    pino.destination({ dest: 1, sync: false, minLength: 4096 }),
    AUDIT_FLUSH_MS,
  ));
}
let sharedStdout: pino.DestinationStream | undefined;
const AUDIT_FLUSH_MS = 200;

/**
 * `destination` with each line written within `ms`: a timer armed by a line when none is, and
 * none while no line waits. (sonic-boom's own `periodicFlush` writes every period, an empty
 * buffer when idle: a thread-pool write and a wake-up of the event loop five times a second.)
 */
export function flushedWithin(
  destination: pino.DestinationStream & { flush(): void },
  ms: number,
): pino.DestinationStream {
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    timer = null;
    destination.flush();
  };
  return {
    write(line: string) {
      destination.write(line);
      if (timer === null) {
        timer = setTimeout(flush, ms);
        // Never what keeps a process alive: the exit flush writes what is left.
        timer.unref();
      }
    },
  };
}

/** How each root logger was made, so that a logger of another name can share its output. */
const origins = new WeakMap<
  Logger,
  { service: string; level: string; destination?: pino.DestinationStream }
>();

/**
 * A logger like `log` (same service, level and destination) under another logger name, e.g.
 * `svc.access` beside `svc.gateway`. A child logger cannot rename: pino would write the name
 * twice. A logger not made by createLogger is returned as it is.
 */
export function renamedLogger(log: Logger, loggerName: string): Logger {
  const origin = origins.get(log);
  if (!origin) return log;
  return createLogger(origin.service, origin.level, origin.destination, loggerName);
}

export type { Logger };
