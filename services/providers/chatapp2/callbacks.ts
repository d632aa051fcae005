import crypto from "node:crypto";
import { safeEqual } from "../../../lib/crypto";
import { header, parseJson, str, type Callback, type ProviderEvent } from "../callbacks";

/**
 * chatapp2 (WhatsApp Cloud) callbacks: `X-Hub-Signature-256: sha256=` and
 * the hex HMAC-SHA256 of the exact body with the app secret, on every POST;
 * `entry[].changes[].value` carries inbound `messages[]` and the
 * `statuses[]` of what we sent.
 */

export function verifyCallback(cb: Callback, config: Record<string, unknown>): boolean {
  const signature = header(cb, "X-Hub-Signature-256");
  if (!signature?.startsWith("sha256=") || typeof config.appSecret !== "string") return false;
  const expected = crypto.createHmac("sha256", config.appSecret).update(cb.rawBody, "utf8").digest("hex");
  return safeEqual(expected, signature.slice("sha256=".length).toLowerCase());
}

/** The GET handshake: Meta's `hub.mode=subscribe` with our verify token gets its challenge back. */
export function handshakeAnswer(
  query: { mode?: string; verifyToken?: string; challenge?: string },
  verifyToken: unknown,
): string | null {
  if (query.mode !== "subscribe" || typeof verifyToken !== "string" || query.challenge === undefined)
    return null;
  return safeEqual(query.verifyToken ?? "", verifyToken) ? query.challenge : null;
}

type Json = Record<string, unknown>;
const list = (value: unknown): Json[] =>
  Array.isArray(value) ? value.filter((v): v is Json => !!v && typeof v === "object") : [];
const obj = (value: unknown): Json => (value && typeof value === "object" ? (value as Json) : {});

/** A WhatsApp number (digits, or as displayed) in E.164. */
const e164 = (value: unknown): string => {
  const digits = String(value ?? "").replace(/\D/g, "");
  return digits ? `+${digits}` : "";
};

/** What a person wrote: a text, a quick-reply button, an interactive reply, else a media caption. */
function textOf(message: Json): string {
  const interactive = obj(message.interactive);
  return (
    str(obj(message.text).body) ??
    str(obj(message.button).text) ??
    str(obj(interactive.button_reply).title) ??
    str(obj(interactive.list_reply).title) ??
    str(obj(message[String(message.type)]).caption) ??
    ""
  );
}

/** The message's `timestamp` (Unix seconds, as a string) as a moment; null when it is not one. */
function sentAt(value: unknown): Date | null {
  const seconds = Number(value);
  return value !== undefined && value !== null && value !== "" && Number.isFinite(seconds) && seconds > 0
    ? new Date(seconds * 1000)
    : null;
}

function statusEvent(status: Json): ProviderEvent | null {
  const id = str(status.id);
  const base = {
    messageId: null,
    providerMessageId: id,
    eventId: id ? `${id}:${String(status.status)}` : null,
  };
  if (status.status === "delivered") return { kind: "delivered", ...base };
  if (status.status === "read") return { kind: "opened", ...base };
  if (status.status === "failed") {
    const [error] = list(status.errors);
    const reason = error ? [error.code, error.title].filter((p) => p !== undefined).join(" ") : "failed";
    return { kind: "failed", ...base, reason };
  }
  return null;
}

export function readEvents(body: string): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  for (const entry of list(obj(parseJson(body)).entry))
    for (const change of list(entry.changes)) {
      const value = obj(change.value);
      const to = e164(obj(value.metadata).display_phone_number);
      for (const message of list(value.messages)) {
        const id = str(message.id);
        const from = e164(message.from);
        // Without a sender there is no contact to find: nothing to receive.
        if (!from) continue;
        events.push({
          kind: "inbound",
          providerMessageId: id,
          eventId: id,
          from,
          to,
          text: textOf(message),
          references: [str(obj(message.context).id)].filter((id): id is string => id !== null),
          sentAt: sentAt(message.timestamp),
        });
      }
      for (const status of list(value.statuses)) {
        const event = statusEvent(status);
        if (event) events.push(event);
      }
    }
  return events;
}
