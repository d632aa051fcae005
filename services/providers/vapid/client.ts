import fs from "node:fs";
import https from "node:https";
import tls from "node:tls";
import { LRUCache } from "lru-cache";
import webPush, { WebPushError } from "web-push";
import { config } from "../../../lib/config";
import type { PushClient, PushNotification, PushOutcome, PushTarget } from "../clients/push";
import type { VapidConfig } from "./config";

/**
 * `vapid`: web push (RFC 8030) through `web-push`, the payload encrypted for
 * the browser's keys (RFC 8291, `aes128gcm`) and signed with the
 * workspace's VAPID pair (RFC 8292: one token per push service, reused for
 * hours, as the RFC allows). Each client keeps its own keep-alive
 * agent (connections to a push service are reused across sends), ended by
 * `close()` when its provider changes or the process stops.
 */

/** How long a push service keeps a notification for a browser that is offline (seconds). */
export const WEB_PUSH_TTL_SECONDS = 86_400;

/** The notification as the service worker (public/cms-push-worker.js) reads it. */
const pushPayload = (n: PushNotification): string =>
  JSON.stringify({
    messageId: n.messageId,
    title: n.title,
    body: n.body,
    url: n.url,
    icon: n.icon,
    image: n.image,
  });

/** How long a VAPID token is valid (RFC 8292: at most 24 hours), and how long before its end a new one is signed. */
const VAPID_TOKEN_SECONDS = 12 * 3600;
const VAPID_RENEW_SECONDS = 3600;

/**
 * The TLS trust of a client's connections, made once (not per connection):
 * the system's CAs plus PUSH_CA_FILE's when set; Node's defaults otherwise.
 */
function secureContext(): tls.SecureContext | undefined {
  const extra = config().pushCaFile;
  return extra
    ? tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(extra, "utf8")] })
    : undefined;
}

/** A push service's answer in the push client's words: 404/410 gone; 408, 429, 5xx and the network transient. */
function outcomeOfError(err: unknown): PushOutcome {
  if (err instanceof WebPushError) {
    const status = err.statusCode;
    if (status === 404 || status === 410) return { status: "gone", code: String(status) };
    return {
      status: "failed",
      code: String(status),
      transient: status === 408 || status === 429 || status >= 500,
    };
  }
  const code = (err as { code?: unknown }).code;
  // The network (refused, reset, timed out, TLS) has a system code; Node's refusal of the input an ERR_ one;
  // web-push's own refusal of the input none.
  if (typeof code === "string") return { status: "failed", code, transient: !code.startsWith("ERR_") };
  // web-push ends a request past `timeout` with "Socket timeout"; anything else it throws refuses the subscription.
  const timedOut = /timeout/i.test((err as Error).message ?? "");
  return { status: "failed", code: timedOut ? "timeout" : "invalid_subscription", transient: timedOut };
}

export function vapidClient(id: string, vapid: VapidConfig): PushClient {
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: config().providerHttpConnections,
    secureContext: secureContext(),
  });
  // A push service's VAPID token is signed once and reused until near its end, not signed per push.
  const tokens = new LRUCache<string, { authorization: string; renewAt: number }>({ max: 1_000 });
  const authorization = (endpoint: string): string => {
    const audience = new URL(endpoint).origin;
    const now = Math.floor(Date.now() / 1000);
    const kept = tokens.get(audience);
    if (kept && kept.renewAt > now) return kept.authorization;
    const expiration = now + VAPID_TOKEN_SECONDS;
    const headers = webPush.getVapidHeaders(
      audience,
      vapid.subject,
      vapid.publicKey,
      vapid.privateKey,
      "aes128gcm",
      expiration,
    );
    tokens.set(audience, { authorization: headers.Authorization, renewAt: expiration - VAPID_RENEW_SECONDS });
    return headers.Authorization;
  };
  return {
    id,
    type: "vapid",
    async push(target: PushTarget, notification: PushNotification): Promise<PushOutcome> {
      if (!target.endpoint || !target.keys) return { status: "gone", code: "no_endpoint" };
      try {
        const answer = await webPush.sendNotification(
          { endpoint: target.endpoint, keys: target.keys },
          pushPayload(notification),
          {
            headers: { Authorization: authorization(target.endpoint) },
            TTL: WEB_PUSH_TTL_SECONDS,
            contentEncoding: "aes128gcm",
            agent,
            timeout: config().providerTimeoutMs,
          },
        );
        const location = answer.headers.location;
        return { status: "accepted", providerMessageId: typeof location === "string" ? location : null };
      } catch (err) {
        return outcomeOfError(err);
      }
    },
    async close() {
      agent.destroy();
    },
  };
}
