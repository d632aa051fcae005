import { SegmentedMessage } from "sms-segments-calculator";
import { errorText, refusal, send } from "../clients/http";
import { ProviderError, type ProviderClient } from "../clients/types";
import type { Smsapi2Config } from "./config";

/**
 * `smsapi2`: the Vonage SMS API wire. `POST /sms/json`, form-encoded with
 * `api_key` and `api_secret`, our message id as `client-ref`; a text with
 * characters outside GSM-7 goes as `type=unicode`. Vonage answers 200 with
 * one entry per part it sent; a part's `status` other than "0" is a refusal.
 */

const NAME = "smsapi2";
/** Vonage statuses worth a retry: 1 throttled, 5 internal error. */
const TRANSIENT_STATUSES = new Set(["1", "5"]);

interface VonagePart {
  status: string;
  "message-id"?: string;
  "error-text"?: string;
}

export function smsapi2Client(id: string, config: Smsapi2Config): ProviderClient {
  const url = `${(config.baseUrl ?? "https://rest.nexmo.com").replace(/\/$/, "")}/sms/json`;
  return {
    id,
    type: NAME,
    async send(message) {
      const text = String(message.content.body ?? "");
      const form = new URLSearchParams({
        api_key: config.apiKey,
        api_secret: config.apiSecret,
        from: config.from.replace(/^\+/, ""),
        to: message.to.replace(/^\+/, ""),
        text,
        "client-ref": message.messageId,
      });
      if (new SegmentedMessage(text).encodingName === "UCS-2") form.set("type", "unicode");
      const answer = await send(NAME, url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
      });
      if (answer.status !== 200)
        throw refusal(
          NAME,
          answer.status,
          errorText(answer.body, (j) => j["error-text"] ?? j.title),
        );
      const parts = (JSON.parse(answer.body) as { messages?: VonagePart[] }).messages ?? [];
      const failed = parts.find((p) => p.status !== "0");
      if (failed || !parts.length)
        throw new ProviderError(
          `${NAME} status ${failed?.status ?? "none"}: ${failed?.["error-text"] ?? "no message accepted"}`,
          TRANSIENT_STATUSES.has(failed?.status ?? ""),
        );
      return { providerMessageId: parts[0]["message-id"] as string, segments: parts.length };
    },
  };
}
