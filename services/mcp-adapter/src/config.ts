import { Type, type Static } from 'typebox';
import { DEFAULT_DATA_DIR } from '@svc/proto';
import { loadConfig } from '@svc/config';

/**
 * Settings of the MCP adapter, read once from the environment by `main.ts`. Durations are
 * seconds, as the specification names them; the adapter converts them to milliseconds once.
 */
export const McpAdapterConfig = Type.Object({
  SVC_MCP_API_URL: Type.String({
    default: 'https://127.0.0.1:8443',
    pattern: '^https?://',
    description:
      "Base address of the svc REST API (http:// or https://), without a trailing path. The default is `npm start`'s gateway.",
  }),
  SVC_MCP_API_KEY: Type.String({
    default: '',
    description:
      "API key (JWT) sent as Bearer to the REST API; required, except for a loopback API address whose SVC_DATA_DIR holds `npm start`'s admin.env (then only the key tools work). Its role and contexts limit what the tools may do.",
  }),
  SVC_MCP_TIMEOUT: Type.Number({
    default: 30,
    exclusiveMinimum: 0,
    description: 'Timeout of one HTTP request to the API, seconds.',
  }),
  SVC_MCP_JOB_POLL_INTERVAL: Type.Number({
    default: 2,
    exclusiveMinimum: 0,
    description: 'Seconds between job status polls while a tool waits for its job.',
  }),
  SVC_MCP_JOB_TIMEOUT: Type.Number({
    default: 300,
    exclusiveMinimum: 0,
    description:
      'Longest a tool waits for its job, seconds; on expiry the tool returns a JOB_WAIT_TIMEOUT error carrying the job_id (the job keeps running).',
  }),
  SVC_MCP_TRANSPORT: Type.Union([Type.Literal('stdio'), Type.Literal('http')], {
    default: 'stdio',
    description: 'MCP transport: stdio (JSON-RPC over stdin/stdout) or http (streamable HTTP).',
  }),
  SVC_MCP_HTTP_HOST: Type.String({
    default: '127.0.0.1',
    description:
      'Address the streamable-HTTP listener binds. Loopback by default: whoever reaches it acts with the adapter API key.',
  }),
  SVC_MCP_HTTP_PORT: Type.Integer({
    default: 3000,
    minimum: 0,
    maximum: 65535,
    description: 'Port of the streamable-HTTP listener; 0 picks a free port (logged at start).',
  }),
  SVC_MCP_HTTP_AUTH_TOKEN: Type.String({
    default: '',
    description:
      'When set, streamable-HTTP clients must send Authorization: Bearer <this token>. Required when SVC_MCP_HTTP_HOST is not loopback (the adapter refuses to start without it).',
  }),
  SVC_MCP_HTTP_ALLOWED_HOSTS: Type.Array(Type.String(), {
    default: [],
    description:
      'Host names, comma-separated, that Host and Origin headers may carry besides loopback names and SVC_MCP_HTTP_HOST (the names clients use to reach the listener); anything else is 403, whatever the bound address.',
  }),
  SVC_MCP_COMMAND_POLICY: Type.Union([Type.Literal('read-only'), Type.Literal('any')], {
    default: 'read-only',
    description:
      "Commands send_command and send_command_structured may run: read-only (default) asks the service to refuse configuration entry, reload, write/erase/copy/delete, clear and the like (X-Svc-Command-Policy); any runs what the context allows. The tools' annotations say which is in force.",
  }),
  SVC_MCP_INSECURE_TLS: Type.Boolean({
    default: false,
    description:
      "Accept any TLS certificate from the API (the service's self-signed one); prefer SVC_MCP_CA_FILE.",
  }),
  SVC_MCP_CA_FILE: Type.String({
    default: '',
    description:
      'PEM file of the CA (or the self-signed certificate) the API certificate must chain to. When empty: the system CAs, and for a loopback API address also the self-signed certificate `npm start` keeps in SVC_DATA_DIR/tls/cert.pem.',
  }),
  SVC_DATA_DIR: Type.String({
    default: DEFAULT_DATA_DIR,
    description:
      "The gateway's data directory (as for `npm start`), read for a loopback API address as the `svc` CLI reads it: its self-signed tls/cert.pem is trusted when SVC_MCP_CA_FILE is empty, and create_api_key and revoke_api_key use the admin secret of its admin.env.",
  }),
  LOG_LEVEL: Type.String({
    default: 'INFO',
    description: 'DEBUG, INFO, WARNING or ERROR; logs go to stderr.',
  }),
});
export type McpAdapterConfig = Static<typeof McpAdapterConfig>;

/** Reads and checks the adapter settings; throws `ConfigError` listing every bad variable. */
export function loadMcpAdapterConfig(
  env: Readonly<Record<string, string | undefined>>,
): Readonly<McpAdapterConfig> {
  return loadConfig(McpAdapterConfig, env);
}
