import { Errors } from "moleculer";

/**
 * The one error catalogue. Callers branch on `err.type` (never `instanceof`:
 * subclasses do not survive a NATS hop). The gateway renders these as the
 * contract's `{error, code, details}` body.
 */
export const ErrorCode = {
  VALIDATION_ERROR: "VALIDATION_ERROR",
  NOT_RETRYABLE: "NOT_RETRYABLE",
  QUERY_TOO_EXPENSIVE: "QUERY_TOO_EXPENSIVE",
  UNAUTHORIZED: "UNAUTHORIZED",
  INVALID_SIGNATURE: "INVALID_SIGNATURE",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  ROUTE_NOT_FOUND: "ROUTE_NOT_FOUND",
  CONFLICT: "CONFLICT",
  TEMPLATE_ERROR: "TEMPLATE_ERROR",
  INVALID_TOKEN: "INVALID_TOKEN",
  IDEMPOTENCY_CONFLICT: "IDEMPOTENCY_CONFLICT",
  INVALID_STATE: "INVALID_STATE",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  RANGE_NOT_SATISFIABLE: "RANGE_NOT_SATISFIABLE",
  RATE_LIMITED: "RATE_LIMITED",
  SERVICE_UNAVAILABLE: "SERVICE_UNAVAILABLE",
  UPSTREAM_ERROR: "UPSTREAM_ERROR",
  INTERNAL: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface FieldIssue {
  field: string;
  message: string;
  /** A template's line, for TEMPLATE_ERROR. */
  line?: number;
}

export interface ErrorData {
  details?: FieldIssue[];
  retryAfter?: number;
  /** A 416's `Content-Range: bytes *\/<size>`. */
  contentRange?: string;
}

function clientError(message: string, status: number, code: ErrorCode, data?: ErrorData) {
  return new Errors.MoleculerClientError(message, status, code, data);
}

export const validationError = (message: string, details?: FieldIssue[]) =>
  clientError(message, 400, ErrorCode.VALIDATION_ERROR, details ? { details } : undefined);
export const fieldError = (field: string, message: string) =>
  validationError(`${field} ${message}`, [{ field, message }]);
export const notRetryable = (message: string) => clientError(message, 400, ErrorCode.NOT_RETRYABLE);
export const queryTooExpensive = (message: string) =>
  clientError(message, 400, ErrorCode.QUERY_TOO_EXPENSIVE);
export const unauthorized = (message = "Authentication required") =>
  clientError(message, 401, ErrorCode.UNAUTHORIZED);
export const invalidSignature = (message = "Invalid signature") =>
  clientError(message, 401, ErrorCode.INVALID_SIGNATURE);
export const forbidden = (message = "Forbidden") => clientError(message, 403, ErrorCode.FORBIDDEN);
/** `issue` names the field that carried the unknown id, when a body referenced it. */
export const notFound = (what = "Resource", issue?: FieldIssue) =>
  clientError(`${what} not found`, 404, ErrorCode.NOT_FOUND, issue ? { details: [issue] } : undefined);
/** The action's side of the not-found rule: repos answer null for a missing row, the action turns it into the 404. */
export function found<T>(row: T | null | undefined, what: string): T {
  if (row === null || row === undefined) throw notFound(what);
  return row;
}
/**
 * Another service's "no such row" (its `found`), by the type, which survives a NATS hop as the class does not;
 * Moleculer's own 404 (SERVICE_NOT_FOUND: no node runs the action, as in an outage) is not one.
 */
export const isNotFound = (err: unknown): boolean =>
  (err as { type?: unknown } | null)?.type === ErrorCode.NOT_FOUND;
/** A `.catch` that reads another service's 404 as "no such row" and lets every other error through. */
export function nullIfNotFound(err: unknown): null {
  if (isNotFound(err)) return null;
  throw err;
}
export const conflict = (message: string) => clientError(message, 409, ErrorCode.CONFLICT);
/** A Liquid or MJML fault at save, naming the field and line. */
export const templateError = (details: FieldIssue[]) =>
  clientError(
    `Template error: ${details.map((d) => `${d.field}${d.line ? ` (line ${d.line})` : ""}: ${d.message}`).join("; ")}`,
    400,
    ErrorCode.TEMPLATE_ERROR,
    { details },
  );
/** A public link's token or signature that does not verify (or has expired). */
export const invalidToken = (message = "The link is invalid or has expired") =>
  clientError(message, 400, ErrorCode.INVALID_TOKEN);
export const idempotencyConflict = (message: string) =>
  clientError(message, 409, ErrorCode.IDEMPOTENCY_CONFLICT);
export const invalidState = (message: string) => clientError(message, 409, ErrorCode.INVALID_STATE);
export const payloadTooLarge = (message: string) => clientError(message, 413, ErrorCode.PAYLOAD_TOO_LARGE);
export const rangeNotSatisfiable = (size: number) =>
  clientError("The requested range is outside the file", 416, ErrorCode.RANGE_NOT_SATISFIABLE, {
    contentRange: `bytes */${size}`,
  });
export const rateLimited = (retryAfter: number) =>
  clientError("Too many requests", 429, ErrorCode.RATE_LIMITED, { retryAfter });
/** A provider or remote API we had to ask could not be reached, or failed (502). */
export const upstreamError = (message: string) => clientError(message, 502, ErrorCode.UPSTREAM_ERROR);

export interface HttpErrorResponse {
  status: number;
  body: { error: string; code: string; details?: FieldIssue[] };
  headers: Record<string, string>;
}

interface ErrorLike {
  name?: string;
  message?: string;
  code?: unknown;
  type?: unknown;
  data?: unknown;
  status?: unknown;
  statusCode?: unknown;
}

/** Moleculer's validator reports `[{field, message, type}]`; keep field and message only. */
function validatorDetails(data: unknown): FieldIssue[] | undefined {
  if (!Array.isArray(data)) return undefined;
  return data.map((item: { field?: string; message?: string }) => ({
    field: String(item.field ?? ""),
    message: String(item.message ?? "is invalid"),
  }));
}

const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * A dependency out of reach, PostgreSQL above all: Sequelize's connection
 * errors, pg's own (refused, terminated), the server's "connection exception"
 * (08xxx), "shutting down" (57P01-57P03) and "too many connections" (53300)
 * states, and a refused or reset socket. Names and codes survive a NATS hop;
 * classes do not.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  const e = (err ?? {}) as ErrorLike & { original?: { code?: unknown }; parent?: { code?: unknown } };
  const name = typeof e.name === "string" ? e.name : "";
  if (/^Sequelize(Connection|HostNotFound|HostNotReachable|InvalidConnection)/.test(name)) return true;
  const codes = [e.code, e.original?.code, e.parent?.code].filter((c): c is string => typeof c === "string");
  if (
    codes.some((c) =>
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|08...|57P0[123]|53300)$/.test(c),
    )
  )
    return true;
  return /Connection terminated|connection timeout exceeded|Client has encountered a connection error/i.test(
    String(e.message ?? ""),
  );
}

/**
 * Map any error to the contract's HTTP answer. `routeMissing` marks the
 * gateway's own "no such route" errors so they answer ROUTE_NOT_FOUND.
 */
export function toHttpError(err: unknown, routeMissing: boolean): HttpErrorResponse {
  const e = (err ?? {}) as ErrorLike;
  const status = typeof e.code === "number" ? e.code : Number(e.status ?? e.statusCode) || 500;
  const type = typeof e.type === "string" ? e.type : "";
  const headers: Record<string, string> = {};

  if (routeMissing) {
    return { status: 404, headers, body: { error: "Route not found", code: ErrorCode.ROUTE_NOT_FOUND } };
  }
  // body-parser failures arrive as http-errors with a `type` of their own.
  if (type === "entity.too.large" || status === 413) {
    return {
      status: 413,
      headers,
      body: { error: "Request body is too large", code: ErrorCode.PAYLOAD_TOO_LARGE },
    };
  }
  if (type === "entity.parse.failed" || type === "INVALID_REQUEST_BODY") {
    return {
      status: 400,
      headers,
      body: { error: "Request body is not valid JSON", code: ErrorCode.VALIDATION_ERROR },
    };
  }
  // zlib's failure on a body that does not match its Content-Encoding (moleculer-web keeps zlib's string code).
  if (typeof e.code === "string" && e.code.startsWith("Z_")) {
    return {
      status: 400,
      headers,
      body: { error: "Request body does not match its Content-Encoding", code: ErrorCode.VALIDATION_ERROR },
    };
  }
  if (type === "request.aborted" || type === "request.size.invalid") {
    return {
      status: 400,
      headers,
      body: { error: "Request body is incomplete", code: ErrorCode.VALIDATION_ERROR },
    };
  }
  if (isDependencyUnavailable(e)) {
    headers["Retry-After"] = String(UNAVAILABLE_RETRY_AFTER_SECONDS);
    return {
      status: 503,
      headers,
      body: {
        error: "A service this request needs is unreachable; try again shortly",
        code: ErrorCode.SERVICE_UNAVAILABLE,
      },
    };
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported" || status === 415) {
    return {
      status: 400,
      headers,
      body: { error: "Unsupported request body encoding", code: ErrorCode.VALIDATION_ERROR },
    };
  }
  if (e.name === "ValidationError" && type === "VALIDATION_ERROR") {
    const details = validatorDetails(e.data);
    const first = details?.[0];
    const message = first ? `${first.field}: ${first.message}` : "Invalid parameters";
    return { status: 400, headers, body: { error: message, code: ErrorCode.VALIDATION_ERROR, details } };
  }
  if (status >= 400 && status < 500 && Object.values(ErrorCode).includes(type as ErrorCode)) {
    const data = (e.data ?? {}) as ErrorData;
    if (data.retryAfter !== undefined) headers["Retry-After"] = String(data.retryAfter);
    if (data.contentRange !== undefined) headers["Content-Range"] = data.contentRange;
    const body: HttpErrorResponse["body"] = { error: String(e.message), code: type };
    if (data.details) body.details = data.details;
    return { status, headers, body };
  }
  if (status === 502 && type === ErrorCode.UPSTREAM_ERROR)
    return { status, headers, body: { error: String(e.message), code: type } };
  if (status === 401)
    return { status, headers, body: { error: "Authentication required", code: ErrorCode.UNAUTHORIZED } };
  if (status === 403) return { status, headers, body: { error: "Forbidden", code: ErrorCode.FORBIDDEN } };
  // SERVICE_NOT_FOUND here is a call the request's action made to a service no node runs now (an outage).
  if (status === 503 || type === "SERVICE_NOT_AVAILABLE" || type === "SERVICE_NOT_FOUND") {
    return {
      status: 503,
      headers,
      body: { error: "Service unavailable", code: ErrorCode.SERVICE_UNAVAILABLE },
    };
  }
  // Other client errors (moleculer's or moleculer-web's own types) keep their status under the contract's code.
  const byStatus: Record<number, ErrorCode> = {
    400: ErrorCode.VALIDATION_ERROR,
    404: ErrorCode.NOT_FOUND,
    409: ErrorCode.CONFLICT,
    422: ErrorCode.VALIDATION_ERROR,
    429: ErrorCode.RATE_LIMITED,
  };
  if (byStatus[status]) {
    if (status === 429) headers["Retry-After"] = String((e.data as ErrorData | undefined)?.retryAfter ?? 1);
    const body = { error: String(e.message ?? "Bad request"), code: byStatus[status] };
    return { status: status === 422 ? 400 : status, headers, body };
  }
  if (status === 408 || type === "REQUEST_TIMEOUT") {
    return {
      status: 503,
      headers,
      body: { error: "Service unavailable", code: ErrorCode.SERVICE_UNAVAILABLE },
    };
  }
  return { status: 500, headers, body: { error: "Internal server error", code: ErrorCode.INTERNAL } };
}
