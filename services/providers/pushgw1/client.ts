import { importPKCS8, SignJWT } from "jose";
import { send, type Answer } from "../clients/http";
import { KeptTokens, tokenSlot, type Token } from "../clients/kept-token";
import type { PushClient, PushNotification, PushOutcome } from "../clients/push";
import { readServiceAccount, type Pushgw1Config, type ServiceAccount } from "./config";

/**
 * `pushgw1`: the FCM HTTP v1 wire. An OAuth access token comes from the
 * service account (a JWT assertion signed RS256, exchanged at its
 * `token_uri`), is kept per provider (clients/kept-token.ts) and reused
 * until five minutes before it expires; then `POST /v1/projects/{projectId}/messages:send` with it, one
 * device token per request, over the providers' keep-alive agent. What
 * happened is read from the error's `details[].errorCode`, never its text
 * (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode).
 */

const NAME = "pushgw1";
const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ASSERTION_SECONDS = 3600;
/** A token this close to its expiry is replaced before use. */
const REFRESH_BEFORE_MS = 5 * 60_000;

/** The FCM error codes that say what to do, as `details[].errorCode` names them. */
const GONE_CODES = new Set(["UNREGISTERED"]);
const TRANSIENT_CODES = new Set(["QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL"]);
const PERMANENT_CODES = new Set(["INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR"]);

/** Kept per provider and config version (a replaced service account gets its own token). */
const tokens = new KeptTokens();

/** A refusal before the send (the token exchange, the network), in the outcome's words. */
class Refused extends Error {
  constructor(
    readonly code: string,
    readonly transient: boolean,
  ) {
    super(code);
  }
}

export function pushgw1Client(id: string, config: Pushgw1Config): PushClient {
  const account = readServiceAccount(config.serviceAccount);
  const base = (config.baseUrl ?? "https://fcm.googleapis.com").replace(/\/$/, "");
  const url = `${base}/v1/projects/${encodeURIComponent(config.projectId)}/messages:send`;
  const slot = tokenSlot(id, config.serviceAccount);
  const token = (stale?: string) => tokens.get(slot, () => exchange(account), stale);

  const post = (accessToken: string, message: unknown) =>
    request(url, {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      body: JSON.stringify({ message }),
    });

  return {
    id,
    type: NAME,
    async push(target, notification) {
      if (!target.token) return { status: "failed", code: "no_token", transient: false };
      const message = fcmMessage(target.token, notification);
      try {
        const used = await token();
        let answer = await post(used.value, message);
        // Revoked or expired early: one new token (shared with the other sends that saw it), one more try.
        if (answer.status === 401) answer = await post((await token(used.value)).value, message);
        return fcmOutcome(answer);
      } catch (err) {
        if (err instanceof Refused) return { status: "failed", code: err.code, transient: err.transient };
        throw err;
      }
    },
  };
}

/** The v1 message for one device: the notification, and the click URL and our message id as data. */
export function fcmMessage(token: string, n: PushNotification): Record<string, unknown> {
  const link = n.url?.startsWith("https://") ? n.url : null;
  return {
    token,
    notification: { title: n.title, body: n.body, ...(n.image && { image: n.image }) },
    // FCM data values are strings only.
    data: { messageId: n.messageId, ...(n.url && { url: n.url }) },
    android: { priority: "HIGH" },
    // Web clients of the app: its icon, and where a click leads (FCM takes https links only).
    ...((n.icon || link) && {
      webpush: {
        ...(n.icon && { notification: { icon: n.icon } }),
        ...(link && { fcm_options: { link } }),
      },
    }),
  };
}

/** What FCM's answer means for the device: its message name, a dead token, or a refusal by error code, else status. */
export function fcmOutcome(answer: { status: number; body: string }): PushOutcome {
  const json = parseJson(answer.body);
  if (answer.status === 200) {
    const name = json?.name;
    return { status: "accepted", providerMessageId: typeof name === "string" ? name : null };
  }
  const error = (json?.error ?? {}) as { status?: unknown; details?: unknown };
  const details = Array.isArray(error.details) ? (error.details as Array<Record<string, unknown>>) : [];
  const code = details.map((d) => d?.errorCode).find((c): c is string => typeof c === "string" && !!c);
  if (code && GONE_CODES.has(code)) return { status: "gone", code };
  const transient =
    code && (TRANSIENT_CODES.has(code) || PERMANENT_CODES.has(code))
      ? TRANSIENT_CODES.has(code)
      : answer.status === 429 || answer.status >= 500;
  const status = typeof error.status === "string" && error.status ? error.status : null;
  return { status: "failed", code: code ?? status ?? `http_${answer.status}`, transient };
}

/** The OAuth 2.0 JWT bearer exchange (RFC 7523) at the service account's token_uri. */
async function exchange(account: ServiceAccount): Promise<Token> {
  let assertion: string;
  try {
    const now = Math.floor(Date.now() / 1000);
    assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({
        alg: "RS256",
        typ: "JWT",
        ...(account.privateKeyId && { kid: account.privateKeyId }),
      })
      .setIssuer(account.clientEmail)
      .setAudience(account.tokenUri)
      .setIssuedAt(now)
      .setExpirationTime(now + ASSERTION_SECONDS)
      .sign(await importPKCS8(account.privateKey, "RS256"));
  } catch {
    throw new Refused("service_account_key", false);
  }
  const answer = await request(account.tokenUri, {
    "content-type": "application/x-www-form-urlencoded",
    body: new URLSearchParams({ grant_type: GRANT_TYPE, assertion }).toString(),
  });
  const json = parseJson(answer.body);
  if (answer.status !== 200 || typeof json?.access_token !== "string") {
    const error = typeof json?.error === "string" ? json.error : `http_${answer.status}`;
    throw new Refused(`oauth_${error}`, answer.status === 429 || answer.status >= 500);
  }
  const seconds = Number(json.expires_in);
  const lifetime = (Number.isFinite(seconds) && seconds > 0 ? seconds : ASSERTION_SECONDS) * 1000;
  return { value: json.access_token, renewAt: Date.now() + lifetime - REFRESH_BEFORE_MS };
}

/** A POST over the keep-alive agent; the network failing is a transient refusal. */
async function request(url: string, init: Record<string, string> & { body: string }): Promise<Answer> {
  const { body, ...headers } = init;
  try {
    return await send(NAME, url, { method: "POST", headers, body });
  } catch {
    throw new Refused("network", true);
  }
}

function parseJson(body: string): Record<string, unknown> | null {
  try {
    const json: unknown = JSON.parse(body);
    return json && typeof json === "object" ? (json as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
