import { Agent, request } from "undici";
import { config } from "../../../lib/config";
import { ProviderError } from "./types";

/**
 * The HTTP side of the API providers: one keep-alive agent for every
 * provider host (connections are reused, not opened per send), with
 * timeouts, and the one mapping of an answer to a refusal.
 */

let agent: Agent | undefined;

function dispatcher(): Agent {
  agent ??= new Agent({
    connections: config().providerHttpConnections,
    keepAliveTimeout: 30_000,
    connectTimeout: config().providerTimeoutMs,
    headersTimeout: config().providerTimeoutMs,
    bodyTimeout: config().providerTimeoutMs,
  });
  return agent;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request to a provider; the network failing (refused, reset, timed out) is a transient refusal. */
export async function send(
  provider: string,
  url: string,
  /** A FormData body goes as multipart/form-data with its own boundary (no content-type header of the caller's). */
  init: { method: "GET" | "POST"; headers: Record<string, string>; body?: string | FormData },
): Promise<Answer> {
  try {
    const res = await request(url, { ...init, dispatcher: dispatcher() });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  } catch (err) {
    const e = err as { code?: string; message?: string };
    throw new ProviderError(`${provider}: ${e.code ?? "network"}: ${e.message ?? String(err)}`, true);
  }
}

/**
 * A refusal with the provider's own code and text: 408, 429 and 5xx are
 * transient (retried with backoff), any other 4xx is permanent.
 */
export function refusal(provider: string, status: number, detail: string): ProviderError {
  const transient = status === 408 || status === 429 || status >= 500;
  return new ProviderError(`${provider} ${status}: ${detail.slice(0, 500) || "no detail"}`, transient);
}

/** The first error text of a JSON answer, as the provider words it; else the raw body. */
export function errorText(body: string, pick: (json: Record<string, unknown>) => unknown): string {
  try {
    const text = pick(JSON.parse(body) as Record<string, unknown>);
    return typeof text === "string" && text ? text : body;
  } catch {
    return body;
  }
}

export const basicAuth = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** Ends the keep-alive connections (shutdown, tests). */
export async function closeHttp(): Promise<void> {
  const current = agent;
  agent = undefined;
  await current?.close();
}
