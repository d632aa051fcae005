import http2 from "node:http2";
import { importPKCS8, SignJWT } from "jose";
import { config as appConfig } from "../../../lib/config";
import { KeptTokens, tokenSlot, type Token } from "../clients/kept-token";
import type { PushClient, PushNotification, PushOutcome } from "../clients/push";
import type { Pushgw2Config } from "./config";

/**
 * `pushgw2`: the APNs token-based wire
 * (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
 * A provider token (a JWT signed ES256 with the team's .p8 key) is kept per
 * provider and reused for 40 minutes (Apple takes one between 20 and 60
 * minutes old and refuses tokens renewed more often); requests go over ONE
 * HTTP/2 session per client, kept open across sends as Apple asks, and opened
 * again when it closed or was sent away. What happened is read from the
 * answer's `reason`, never its text.
 */

const NAME = "pushgw2";
const TOKEN_REUSE_MS = 40 * 60_000;
/** How long APNs keeps trying to deliver to a device that is offline. */
const EXPIRATION_SECONDS = 24 * 3600;

/** The reasons that say the device token will never work for this app again. */
const GONE_REASONS = new Set(["BadDeviceToken", "Unregistered", "DeviceTokenNotForTopic"]);

const tokens = new KeptTokens();

interface Answer {
  status: number;
  apnsId: string | null;
  body: string;
}

/** A send that did not reach a verdict (the network, a key that no longer signs), in the outcome's words. */
class Refused extends Error {
  constructor(
    readonly code: string,
    readonly transient: boolean,
  ) {
    super(code);
  }
}

export function pushgw2Client(id: string, config: Pushgw2Config): PushClient {
  const origin = (
    config.baseUrl ??
    (config.production ? "https://api.push.apple.com" : "https://api.sandbox.push.apple.com")
  ).replace(/\/$/, "");
  const slot = tokenSlot(id, config.teamId, config.keyId, config.privateKey);
  const token = (stale?: string) => tokens.get(slot, () => providerToken(config), stale);
  let session: http2.ClientHttp2Session | null = null;

  /** The kept session, or a new one when there is none or it is closing. */
  function connected(): http2.ClientHttp2Session {
    if (session && !session.closed && !session.destroyed) return session;
    const opened = http2.connect(origin);
    const drop = () => {
      if (session === opened) session = null;
    };
    // A GOAWAY lets the streams in flight finish; the next send opens a new session.
    opened.on("goaway", drop);
    opened.on("close", drop);
    // The streams in flight see the failure themselves.
    opened.on("error", drop);
    session = opened;
    return opened;
  }

  function post(jwt: string, deviceToken: string, body: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = connected().request({
          ":method": "POST",
          ":path": `/3/device/${encodeURIComponent(deviceToken)}`,
          authorization: `bearer ${jwt}`,
          "apns-topic": config.bundleId,
          "apns-push-type": "alert",
          "apns-priority": "10",
          "apns-expiration": String(Math.floor(Date.now() / 1000) + EXPIRATION_SECONDS),
          "content-type": "application/json",
        });
      } catch {
        session = null;
        reject(new Refused("network", true));
        return;
      }
      let status = 0;
      let apnsId: string | null = null;
      const chunks: Buffer[] = [];
      stream.setTimeout(appConfig().providerTimeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL));
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
        const header = headers["apns-id"];
        apnsId = typeof header === "string" ? header : null;
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", () => undefined);
      // An answer is whole when the stream closed cleanly after its headers; else the send did not happen.
      stream.on("close", () => {
        if (status && stream.rstCode === http2.constants.NGHTTP2_NO_ERROR)
          resolve({ status, apnsId, body: Buffer.concat(chunks).toString("utf8") });
        else reject(new Refused("network", true));
      });
      stream.end(body);
    });
  }

  return {
    id,
    type: NAME,
    async push(target, notification) {
      if (!target.token) return { status: "failed", code: "no_token", transient: false };
      const body = JSON.stringify(apnsPayload(notification));
      try {
        const used = await token();
        let answer = await post(used.value, target.token, body);
        // Apple says the token is too old (a clock skew, a pause): one new token, shared, one more try.
        if (answer.status === 403 && reasonOf(answer.body) === "ExpiredProviderToken")
          answer = await post((await token(used.value)).value, target.token, body);
        return apnsOutcome(answer);
      } catch (err) {
        if (err instanceof Refused) return { status: "failed", code: err.code, transient: err.transient };
        throw err;
      }
    },
    async close() {
      const current = session;
      session = null;
      if (current && !current.closed) await new Promise<void>((resolve) => current.close(resolve));
    },
  };
}

/** The APNs payload: the alert, `mutable-content` so a notification service extension may add the image, and our data. */
export function apnsPayload(n: PushNotification): Record<string, unknown> {
  return {
    aps: { alert: { title: n.title, body: n.body }, "mutable-content": 1 },
    messageId: n.messageId,
    ...(n.url && { url: n.url }),
    ...(n.image && { image: n.image }),
  };
}

/** What APNs' answer means for the device: its apns-id, a dead token, or a refusal by reason. */
export function apnsOutcome(answer: Answer): PushOutcome {
  if (answer.status === 200) return { status: "accepted", providerMessageId: answer.apnsId };
  const reason = reasonOf(answer.body);
  // 410: "the device token is no longer active for the topic" (its reason is Unregistered).
  if ((reason && GONE_REASONS.has(reason)) || answer.status === 410)
    return { status: "gone", code: reason ?? "http_410" };
  const transient = answer.status === 429 || answer.status >= 500;
  return { status: "failed", code: reason ?? `http_${answer.status}`, transient };
}

/** The provider token: ES256, header `kid` = the key id, claims `iss` = the team id and `iat`. */
async function providerToken(config: Pushgw2Config): Promise<Token> {
  const issuedAt = Date.now();
  try {
    const value = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: config.keyId })
      .setIssuer(config.teamId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .sign(await importPKCS8(config.privateKey, "ES256"));
    return { value, renewAt: issuedAt + TOKEN_REUSE_MS };
  } catch {
    throw new Refused("provider_key", false);
  }
}

function reasonOf(body: string): string | null {
  try {
    const reason = (JSON.parse(body) as { reason?: unknown }).reason;
    return typeof reason === "string" && reason ? reason : null;
  } catch {
    return null;
  }
}
