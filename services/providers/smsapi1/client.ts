import { config as appConfig } from "../../../lib/config";
import { basicAuth, errorText, refusal, send } from "../clients/http";
import { ProviderError, type ProviderClient } from "../clients/types";
import type { Smsapi1Config } from "./config";

/**
 * `smsapi1`: the Twilio wire. `POST /2010-04-01/Accounts/{sid}/Messages.json`,
 * form-encoded, basic auth `sid:token`, our message id as the
 * `I-Twilio-Idempotency-Token`; 201 `{sid, num_segments}`. Twilio splits a
 * long text itself and reports the parts. Its status callbacks come to our
 * callback URL, named in each send.
 */

const NAME = "smsapi1";

/**
 * The keywords Twilio's default Advanced Opt-Out answers itself, opt-out,
 * opt-in and help alike
 * (https://help.twilio.com/articles/223134027-Twilio-support-for-opt-out-keywords-SMS-STOP-filtering-).
 */
export const SMSAPI1_ANSWERED_KEYWORDS = new Set([
  "STOP",
  "STOPALL",
  "UNSUBSCRIBE",
  "CANCEL",
  "END",
  "QUIT",
  "OPTOUT",
  "REVOKE",
  "START",
  "YES",
  "UNSTOP",
  "HELP",
  "INFO",
]);

/** Twilio's error for a message to a number that opted out with it (https://www.twilio.com/docs/api/errors/21610). */
const OPTED_OUT_CODE = 21610;

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
      if (answer.status !== 201 && answer.status !== 200) {
        const error = refusal(
          NAME,
          answer.status,
          errorText(answer.body, (j) => (j.code ? `${j.code} ${String(j.message ?? "")}` : j.message)),
        );
        throw errorCode(answer.body) === OPTED_OUT_CODE
          ? new ProviderError(error.message, false, "unsubscribed")
          : error;
      }
      const json = JSON.parse(answer.body) as { sid: string; num_segments?: string | number };
      const segments = Number(json.num_segments);
      return {
        providerMessageId: json.sid,
        segments: Number.isFinite(segments) && segments > 0 ? segments : null,
      };
    },
  };
}

/** Twilio's numeric error code of a refusal, if its body names one. */
function errorCode(body: string): number | null {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === "number" ? code : null;
  } catch {
    return null;
  }
}
