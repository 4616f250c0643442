import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { ApiClient } from './api-client.js';
import { AdapterError } from './errors.js';

interface ResourceSpec {
  name: string;
  uri: string;
  title: string;
  description: string;
  path: string;
  /** Statuses whose body is still the resource (the health record of a degraded service is 503). */
  accept?: readonly number[];
}

/** The adapter's own `svc://` resources, each a read-only view of one API route. */
export const RESOURCES: readonly ResourceSpec[] = [
  {
    name: 'health',
    uri: 'svc://health',
    title: 'Service health',
    description:
      'Health record of the service: status (healthy, degraded, no_workers), version, components.',
    path: '/healthcheck',
    accept: [503],
  },
  {
    name: 'contexts',
    uri: 'svc://contexts',
    title: 'Routing contexts',
    description: 'Routing contexts with their active workers and queue depth.',
    path: '/v2/contexts',
  },
  {
    name: 'jobs',
    uri: 'svc://jobs',
    title: 'Recent jobs',
    description: "First page of the adapter key's jobs (newest first) with pagination.",
    path: '/v2/jobs',
  },
  {
    name: 'failed-jobs',
    uri: 'svc://jobs/failed',
    title: 'Failed jobs',
    description:
      'Failed-job registry: sanitized error, error_code, retryability, host and platform.',
    path: '/v2/jobs/failed',
  },
];

export function registerResources(server: McpServer, api: ApiClient): void {
  for (const spec of RESOURCES) {
    server.registerResource(
      spec.name,
      spec.uri,
      { title: spec.title, description: spec.description, mimeType: 'application/json' },
      async (uri, extra): Promise<ReadResourceResult> => {
        try {
          const answer = await api.get(spec.path, {
            signal: extra.signal,
            ...(spec.accept ? { accept: spec.accept } : {}),
          });
          return {
            contents: [
              {
                uri: uri.href,
                mimeType: 'application/json',
                text: JSON.stringify(answer.body, null, 2),
              },
            ],
          };
        } catch (err) {
          // Resource reads have no isError result; the codes travel in the JSON-RPC error data.
          if (err instanceof AdapterError) {
            throw new ResourceReadError(`${spec.uri}: ${err.message}`, {
              error_code: err.code,
              error_retryable: err.retryable,
              ...(err.details.httpStatus !== undefined
                ? { http_status: err.details.httpStatus }
                : {}),
            });
          }
          throw err;
        }
      },
    );
  }
}

/**
 * A failed read as a JSON-RPC error. Not `McpError`: that class prefixes its message with
 * "MCP error <code>:" and the client adds the same prefix again. The SDK sends `code`, `message`
 * and `data` of whatever a handler throws.
 */
class ResourceReadError extends Error {
  override readonly name = 'ResourceReadError';
  readonly code = ErrorCode.InternalError;
  constructor(
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}
