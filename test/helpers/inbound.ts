import type { WorkspaceId } from "../../lib/tenancy";
import { acceptInbound } from "../../services/providers/inbound-queue.repo";
import type { TestApp } from "./app";
import { twilioSignature } from "./provider-signatures";

/**
 * The one way a test waits for inbound filing: a provider's webhook accepts
 * an inbound message durably and answers, then the providers service files
 * it (services/providers/inbound-filing.ts). `providers.drainInbound` files
 * what is left now and waits for other nodes' batches; a message still
 * unfiled after `timeoutMs` fails the test.
 */
export async function inboundFiled(app: Pick<TestApp, "broker">, timeoutMs = 10_000): Promise<void> {
  const left = await app.broker.call<number, { timeoutMs: number }>("providers.drainInbound", { timeoutMs });
  if (left) throw new Error(`${left} accepted inbound messages are still unfiled after ${timeoutMs} ms`);
}

/** A webhook's answer, once the inbound messages it accepted are filed. */
export async function filedAfter<T>(app: Pick<TestApp, "broker">, answer: Promise<T>): Promise<T> {
  const res = await answer;
  await inboundFiled(app);
  return res;
}

/** A Twilio SMS webhook `form` POSTed to the provider's route, signed as Twilio signs it for `publicUrl`. */
export function postTwilioSms(
  app: Pick<TestApp, "http">,
  opts: { publicUrl: string; providerId: string; authToken: string },
  form: Record<string, string>,
) {
  const path = `/api/providers/sms/webhooks?providerId=${opts.providerId}`;
  return app.http().request("POST", path, {
    raw: new URLSearchParams(form).toString(),
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": twilioSignature(opts.authToken, `${opts.publicUrl}${path}`, form),
    },
  });
}

/** An SMS stored in the inbound queue as its webhook would store it (a test that claims or files by hand). */
export function acceptSms(
  workspaceId: string,
  providerId: string,
  sms: { from: string; to: string; key: string; text: string; providerMessageId?: string },
): Promise<boolean> {
  return acceptInbound({
    workspaceId: workspaceId as WorkspaceId,
    providerId,
    dedupeKey: sms.key,
    conversation: `${workspaceId}\nsms\n${sms.from}`,
    inbound: {
      kind: "inbound",
      providerMessageId: sms.providerMessageId ?? sms.key,
      eventId: null,
      from: sms.from,
      to: sms.to,
      text: sms.text,
    },
    attachments: [],
  });
}
