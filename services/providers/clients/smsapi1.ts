import { config as appConfig } from "../../../lib/config";
import { basicAuth, errorText, refusal, send } from "./http";
import type { ProviderClient } from "./types";

/**
 * `smsapi1`: the Twilio wire. `POST /2010-04-01/Accounts/{sid}/Messages.json`,
 * form-encoded, basic auth `sid:token`, our message id as the
 * `I-Twilio-Idempotency-Token`; 201 `{sid, num_segments}`. Twilio splits a
 * long text itself and reports the parts. Its status callbacks come to our
 * callback URL, named in each send.
 */

export interface Smsapi1Config {
  accountSid: string;
  authToken: string;
  from: string;
  baseUrl?: string;
}

const NAME = "smsapi1";

export function smsapi1Client(id: string, config: Smsapi1Config): ProviderClient {
  const base = (config.baseUrl ?? "https://api.twilio.com").replace(/\/$/, "");
  const url = `${base}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
  return {
    id,
    type: NAME,
    async send(message) {
      const form = new URLSearchParams({
        To: message.to,
        From: config.from,
        Body: String(message.content.body ?? ""),
        StatusCallback: `${appConfig().publicUrl}/api/providers/sms/webhooks?providerId=${encodeURIComponent(id)}`,
      });
      const answer = await send(NAME, url, {
        method: "POST",
        headers: {
          authorization: basicAuth(config.accountSid, config.authToken),
          "content-type": "application/x-www-form-urlencoded",
          "i-twilio-idempotency-token": message.messageId,
        },
        body: form.toString(),
      });
      if (answer.status !== 201 && answer.status !== 200)
        throw refusal(
          NAME,
          answer.status,
          errorText(answer.body, (j) => (j.code ? `${j.code} ${String(j.message ?? "")}` : j.message)),
        );
      const json = JSON.parse(answer.body) as { sid: string; num_segments?: string | number };
      const segments = Number(json.num_segments);
      return {
        providerMessageId: json.sid,
        segments: Number.isFinite(segments) && segments > 0 ? segments : null,
      };
    },
  };
}
