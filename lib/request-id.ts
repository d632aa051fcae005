import { AsyncLocalStorage } from "node:async_hooks";
import type { IncomingHttpHeaders } from "node:http";
import type { Context, Middleware, Span } from "moleculer";
import { newId } from "./crypto";

/**
 * The request id in every log line, on every node: the gateway takes the
 * caller's `X-Request-Id` (or makes one) and answers it; Moleculer carries
 * it as `ctx.requestID` through every call and event, across the
 * transporter (durable channel messages start their own); each node runs a
 * call's handler with the call in an AsyncLocalStorage, which the Pino
 * logger's mixin reads for each line.
 */
/** What runs: a call (its context), or the gateway's request before its first call. */
interface Running {
  requestID: string | null;
  /** The call's active span while tracing, read when the handler calls or emits. */
  span?: Span | null;
}
const running = new AsyncLocalStorage<Running>();

/** A caller's id is kept when it is a plain token (no spaces or control characters to forge log lines with). */
const ACCEPTED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The id a request is known by: its `X-Request-Id` (else `X-Correlation-Id`) when acceptable, else a new one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  for (const name of ["x-request-id", "x-correlation-id"]) {
    const value = headers[name];
    if (typeof value === "string" && ACCEPTED.test(value)) return value;
  }
  // A UUID's 122 random bits, as 32 hex digits: Node draws UUIDs from a kept pool of randomness, where
  // `randomBytes` asks the system each time (a tenth of a small request's CPU).
  return newId().replace(/-/g, "");
}

/** Runs `fn` (and what it awaits) as part of `call`: its lines carry the call's request id. */
export function withRequestId<T>(call: Running, fn: () => T): T {
  return running.run(call, fn);
}

/** Pino's `mixin`: the running request's id as `requestId` on each line, nothing outside a request. */
export function requestIdLogFields(): { requestId?: string } {
  const id = running.getStore()?.requestID;
  return id ? { requestId: id } : {};
}

type Handler = (ctx: Context) => unknown;
/** Options of a call or event; an event's may also be its groups alone. */
type SendOptions =
  | { parentCtx?: unknown; requestID?: string; parentSpan?: unknown; groups?: string | string[] }
  | string
  | string[]
  | undefined;
type Send = (name: string, payload: unknown, opts?: SendOptions) => unknown;

/**
 * A call or event the broker makes (not a context, so no principal or meta
 * passes on) while a request runs keeps that request's id, and its trace
 * under the running span.
 */
function keepRequestId(next: Send): Send {
  return (name, payload, opts) => {
    const call = running.getStore();
    if (!call?.requestID) return next(name, payload, opts);
    const request = call.span
      ? { parentSpan: { id: call.span.id, traceID: call.span.traceID, sampled: call.span.sampled } }
      : { requestID: call.requestID };
    if (typeof opts === "string" || Array.isArray(opts))
      return next(name, payload, { groups: opts, ...request });
    if (opts?.parentCtx || opts?.requestID || opts?.parentSpan) return next(name, payload, opts);
    return next(name, payload, { ...opts, ...request });
  };
}

/**
 * Every local action and event handler runs as its call, and `broker.call`,
 * `emit` and `broadcast` from within it carry the call's request id.
 */
export const RequestIdMiddleware = {
  name: "RequestId",
  localAction(next: Handler) {
    return (ctx: Context) => withRequestId(ctx, () => next(ctx));
  },
  localEvent(next: Handler) {
    return (ctx: Context) => withRequestId(ctx, () => next(ctx));
  },
  call: keepRequestId,
  emit: keepRequestId,
  broadcast: keepRequestId,
  broadcastLocal: keepRequestId,
} as unknown as Middleware;
