#!/usr/bin/env node
import { ConfigError } from '@svc/proto';
import { createLogger } from '@svc/telemetry';
import { startMcpAdapter } from './adapter.js';
import { McpAdapterConfig, loadMcpAdapterConfig } from './config.js';

/** `svc-mcp --help`: what the command does and every setting, from the config schema. */
function usage(): string {
  const settings = Object.entries(McpAdapterConfig.properties).map(
    ([name, p]) =>
      `  ${name} (default ${JSON.stringify((p as { default?: unknown }).default ?? '')})\n      ${String((p as { description?: string }).description ?? '')}`,
  );
  return [
    'Usage: svc-mcp [--help]',
    '',
    'MCP server (Model Context Protocol) in front of the svc REST API: its tools submit and',
    'read jobs with the API key in SVC_MCP_API_KEY. Configured by environment variables only:',
    '',
    ...settings,
    '',
    'See docs/mcp.md.',
    '',
  ].join('\n');
}

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(usage());
  process.exit(0);
}

// stdout carries the stdio transport's JSON-RPC: every log line goes to stderr.
const log = createLogger('mcp-adapter', process.env['LOG_LEVEL'], process.stderr);
try {
  const config = loadMcpAdapterConfig(process.env);
  const adapter = await startMcpAdapter(config, { log });
  let stopping = false;
  const shutdown = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping');
    await adapter.stop().catch((err: unknown) => log.error({ err }, 'stop failed'));
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  // Over stdio the client owns the process: its closing stdin ends the session.
  if (config.SVC_MCP_TRANSPORT === 'stdio')
    process.stdin.once('end', () => void shutdown('stdin closed'));
} catch (err) {
  if (err instanceof ConfigError) log.error({ problems: err.problems }, 'invalid configuration');
  else log.error({ err }, 'mcp adapter failed to start');
  process.exit(1);
}
