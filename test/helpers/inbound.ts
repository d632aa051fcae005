import type { Middleware } from "moleculer";
import { Client } from "pg";
import type { WorkspaceId } from "../../lib/tenancy";
import { acceptInbound } from "../../services/providers/inbound-queue.repo";
import { startApp, type TestApp } from "./app";
import { ownerWithWorkspace } from "./http";
import { twilioSignature } from "./provider-signatures";
import { startReceiver } from "./receiver";

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

/** An app with every area inbound filing touches, a workspace, its Twilio-wire provider on a fake, and a pg client. */
export interface SmsInbox {
  app: TestApp;
  ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  providerId: string;
  db: Client;
  stop(): Promise<void>;
}

/** The app of the inbound-queue tests (its provider's auth token is `twilio-auth`); `middlewares` probe its calls. */
export async function startSmsInbox(options: {
  publicUrl: string;
  from: string;
  accountSid: string;
  middlewares?: Middleware[];
}): Promise<SmsInbox> {
  const fake = await startReceiver(() => ({
    status: 201,
    body: JSON.stringify({ sid: "SM-out", num_segments: "1" }),
  }));
  const app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "templates",
      "messages",
      "providers",
      "inbox",
    ],
    env: { PUBLIC_URL: options.publicUrl },
    middlewares: options.middlewares,
  });
  const ctx = await ownerWithWorkspace(app.baseUrl);
  const provider = await ctx.owner.client.post(`${ctx.ws}/providers/sms`, {
    type: "smsapi1",
    config: {
      accountSid: options.accountSid,
      authToken: "twilio-auth",
      from: options.from,
      baseUrl: fake.url("/twilio"),
    },
  });
  const db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
  return {
    app,
    ctx,
    providerId: provider.body.id,
    db,
    async stop() {
      await db.end();
      await app.stop();
      await fake.close();
    },
  };
}
