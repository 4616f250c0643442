/**
 * Error codes the adapter itself gives to tool errors, beside the service's own job codes
 * (`CONNECTION_TIMEOUT`, `AUTH_FAILED`, …) which pass through unchanged from the job record or
 * the API body. Never rename a code: assistants and scripts branch on them.
 */
export const AdapterErrorCode = {
  /** 401: the adapter's API key is missing, invalid, expired or revoked. */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** 403: role or context not permitted, another caller's job, or device locked out. */
  FORBIDDEN: 'FORBIDDEN',
  /** 404: unknown job or key id. */
  NOT_FOUND: 'NOT_FOUND',
  /** 409: cancelling a job that already finished. */
  CONFLICT: 'CONFLICT',
  /** 422: the API rejected the request body. */
  VALIDATION_ERROR: 'VALIDATION_ERROR',
  /** 429: rate limit reached. */
  RATE_LIMITED: 'RATE_LIMITED',
  /** 503: queue full or job store unavailable. */
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  /** Any other non-2xx answer. */
  API_ERROR: 'API_ERROR',
  /** The API answered with something that is not the expected JSON. */
  BAD_RESPONSE: 'BAD_RESPONSE',
  /** One HTTP request took longer than SVC_MCP_TIMEOUT. */
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  /** The API could not be reached (refused, DNS, TLS). */
  API_UNREACHABLE: 'API_UNREACHABLE',
  /** The job did not end within SVC_MCP_JOB_TIMEOUT; it may still be running. */
  JOB_WAIT_TIMEOUT: 'JOB_WAIT_TIMEOUT',
  /** The MCP client cancelled the call; the SDK never delivers this answer (kept for logs). */
  CANCELLED_BY_CLIENT: 'CANCELLED_BY_CLIENT',
  /** A fault of the adapter itself. */
  INTERNAL: 'INTERNAL',
} as const;
export type AdapterErrorCode = (typeof AdapterErrorCode)[keyof typeof AdapterErrorCode];

/**
 * Whether repeating the same call may succeed without a change on the caller's side.
 * JOB_WAIT_TIMEOUT is not retryable on purpose: resubmitting could push configuration twice;
 * the job id in the error lets the assistant follow the running job instead.
 * REQUEST_TIMEOUT is retryable for reads; for a submission the job may have been accepted,
 * which the error message says.
 */
export const ADAPTER_ERROR_RETRYABLE: Readonly<Record<AdapterErrorCode, boolean>> = {
  UNAUTHORIZED: false,
  FORBIDDEN: false,
  NOT_FOUND: false,
  CONFLICT: false,
  VALIDATION_ERROR: false,
  RATE_LIMITED: true,
  SERVICE_UNAVAILABLE: true,
  API_ERROR: false,
  BAD_RESPONSE: false,
  REQUEST_TIMEOUT: true,
  API_UNREACHABLE: true,
  JOB_WAIT_TIMEOUT: false,
  CANCELLED_BY_CLIENT: false,
  INTERNAL: true,
};

const STATUS_CODES: Readonly<Record<number, AdapterErrorCode>> = {
  401: AdapterErrorCode.UNAUTHORIZED,
  403: AdapterErrorCode.FORBIDDEN,
  404: AdapterErrorCode.NOT_FOUND,
  409: AdapterErrorCode.CONFLICT,
  422: AdapterErrorCode.VALIDATION_ERROR,
  429: AdapterErrorCode.RATE_LIMITED,
  503: AdapterErrorCode.SERVICE_UNAVAILABLE,
};

/** The adapter code for an HTTP status the API answered with. */
export function codeForStatus(status: number): AdapterErrorCode {
  return STATUS_CODES[status] ?? AdapterErrorCode.API_ERROR;
}

export interface AdapterErrorDetails {
  /** HTTP status of the API answer, when there was one. */
  httpStatus?: number;
  /** Seconds from the API's Retry-After header (429, 503). */
  retryAfterSeconds?: number;
  /** The job concerned, when known (a wait that timed out, a failed job). */
  jobId?: string;
  /** Last known job status. */
  jobStatus?: string;
  /** The 422 body's issues, passed through for the assistant to correct its input. */
  validation?: unknown;
}

/**
 * A failure that becomes a tool error. `code` is an adapter code or a code the API sent;
 * retryability is data, not the class, so codes from the API keep the API's verdict.
 */
export class AdapterError extends Error {
  override readonly name = 'AdapterError';
  readonly code: string;
  readonly retryable: boolean | null;
  readonly details: AdapterErrorDetails;

  constructor(
    code: string,
    message: string,
    retryable: boolean | null,
    details: AdapterErrorDetails = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.code = code;
    this.retryable = retryable;
    this.details = details;
  }

  static of(
    code: AdapterErrorCode,
    message: string,
    details: AdapterErrorDetails = {},
    options?: ErrorOptions,
  ) {
    return new AdapterError(code, message, ADAPTER_ERROR_RETRYABLE[code], details, options);
  }
}
