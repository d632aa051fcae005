import crypto from "node:crypto";
import { safeEqual } from "../../../lib/crypto";
import { header, type Callback, type ProviderEvent } from "../callbacks";

/** smsapi1 (Twilio): `X-Twilio-Signature`, base64 HMAC-SHA1 of the URL and the sorted form parameters (name + value). */
export function verifyCallback(cb: Callback, config: Record<string, unknown>): boolean {
  const signature = header(cb, "X-Twilio-Signature");
  if (!signature || typeof config.authToken !== "string") return false;
  const params = [...new URLSearchParams(cb.rawBody)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const data = cb.url + params.map(([name, value]) => name + value).join("");
  return safeEqual(
    crypto.createHmac("sha1", config.authToken).update(data, "utf8").digest("base64"),
    signature,
  );
}

/** Twilio: a status callback (`MessageStatus`) or an incoming message (`Body` without a status). */
export function readEvents(body: string): ProviderEvent[] {
  const form = new URLSearchParams(body);
  const sid = form.get("MessageSid") ?? form.get("SmsSid");
  const status = form.get("MessageStatus") ?? form.get("SmsStatus");
  if (form.has("Body") && (!status || status === "received"))
    return [
      {
        kind: "inbound",
        providerMessageId: sid,
        eventId: sid,
        from: form.get("From") ?? "",
        to: form.get("To") ?? "",
        text: form.get("Body") ?? "",
      },
    ];
  const base = {
    messageId: null,
    providerMessageId: sid,
    eventId: sid && status ? `${sid}:${status}` : null,
  };
  if (status === "delivered") return [{ kind: "delivered", ...base }];
  if (status === "undelivered" || status === "failed") {
    const code = form.get("ErrorCode");
    return [{ kind: "failed", ...base, reason: code ? `${status} ${code}` : status }];
  }
  return [];
}
