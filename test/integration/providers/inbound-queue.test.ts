import type { Client } from "pg";
import type { TestApp } from "../../helpers/app";
import type { ownerWithWorkspace } from "../../helpers/http";
import { acceptSms, inboundFiled, postTwilioSms, startSmsInbox, type SmsInbox } from "../../helpers/inbound";
import { operatorCommands, retryInbound } from "../../../lib/operator-commands";
import { asWorkspaceId, type WorkspaceId } from "../../../lib/tenancy";
import type { Poller } from "../../../lib/worker";
import { claimInbound, markUnfiled } from "../../../services/providers/inbound-queue.repo";

/**
 * Inbound messages are accepted durably and filed after (inbound_queue,
 * migration 0105): the webhook answers once the message is stored, a
 * provider's retry stores nothing more, one sender's messages are claimed in
 * arrival order however many nodes claim, and a batch whose node died is
 * taken over when its lease runs out.
 */

const PUBLIC_URL = "https://cms.example.test";
const TWILIO_FROM = "+15550009999";
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let inbox: SmsInbox;
let twilioId: string;
let db: Client;

beforeAll(async () => {
  inbox = await startSmsInbox({ publicUrl: PUBLIC_URL, from: TWILIO_FROM, accountSid: "AC9" });
  ({ app, ctx, db, providerId: twilioId } = inbox);
});
afterAll(() => inbox?.stop());

function inboundSms(from: string, sid: string, body: string) {
  const form = { MessageSid: sid, From: from, To: TWILIO_FROM, Body: body };
  return postTwilioSms(app, { publicUrl: PUBLIC_URL, providerId: twilioId, authToken: "twilio-auth" }, form);
}

const queued = async (sid: string) =>
  (
    await db.query(`SELECT filed_at FROM inbound_queue WHERE provider_id = $1 AND dedupe_key = $2`, [
      twilioId,
      sid,
    ])
  ).rows;

const inboundBodies = async (phone: string) => {
  const c = ctx.owner.client;
  const threads = (await c.get(`${ctx.ws}/inbox?channel=sms`)).body.data as Array<{
    id: string;
    contact: { phone: string };
  }>;
  const thread = threads.find((t) => t.contact.phone === phone);
  if (!thread) return [];
  const detail = (await c.get(`${ctx.ws}/inbox/${thread.id}`)).body;
  return detail.messages
    .filter((m: { direction: string }) => m.direction === "inbound")
    .map((m: { body: string }) => m.body);
};

test("the webhook answers once the message is stored; it is filed after; a retry stores and files nothing more", async () => {
  const first = await inboundSms("+14155550301", "SMq-1", "Is my order on its way?");
  expect(first.status).toBe(200);
  expect(first.body).toEqual({ received: true });
  expect(await queued("SMq-1")).toHaveLength(1);
  await inboundFiled(app);
  expect((await queued("SMq-1"))[0].filed_at).not.toBeNull();
  expect(await inboundBodies("+14155550301")).toEqual(["Is my order on its way?"]);

  // The provider retries: the same message id is stored once and filed once.
  expect((await inboundSms("+14155550301", "SMq-1", "Is my order on its way?")).status).toBe(200);
  await inboundFiled(app);
  expect(await queued("SMq-1")).toHaveLength(1);
  expect(await inboundBodies("+14155550301")).toEqual(["Is my order on its way?"]);
});

test("one sender's messages are claimed in order across nodes; a dead node's claim is taken over when its lease ends", async () => {
  // This node's filer waits while the test claims as other nodes would.
  const filer = (app.broker.getLocalService("providers") as unknown as { inboundFiler: Poller }).inboundFiler;
  await filer.stop();
  try {
    const accept = (from: string, sid: string, text: string) =>
      acceptSms(ctx.workspaceId, twilioId, { from, to: TWILIO_FROM, key: sid, text });
    expect(await accept("+14155550302", "SMq-a1", "first")).toBe(true);
    expect(await accept("+14155550302", "SMq-a2", "second")).toBe(true);
    expect(await accept("+14155550303", "SMq-b1", "other sender")).toBe(true);
    expect(await accept("+14155550303", "SMq-b1", "other sender")).toBe(false);

    // A node claims the first message, then dies holding it (a lease of one second).
    const dead = await claimInbound("dead-node", 1, 1);
    expect(dead.map((r) => r.inbound.text)).toEqual(["first"]);
    // Another node gets the other sender's message, not the second of the first sender's while the first is leased.
    const other = await claimInbound("other-node", 10, 60);
    expect(other.map((r) => r.inbound.text)).toEqual(["other sender"]);
    await markUnfiled(
      "other-node",
      other.map((r) => ({ id: r.id, error: null, retryInSeconds: 0 })),
    );
  } finally {
    filer.start();
  }
  // Once the dead node's lease ran out, this node files all three, the first sender's in order.
  await inboundFiled(app);
  expect(await inboundBodies("+14155550302")).toEqual(["first", "second"]);
  expect(await inboundBodies("+14155550303")).toEqual(["other sender"]);
  const { rows } = await db.query(
    `SELECT dedupe_key, attempts, claimed_by FROM inbound_queue WHERE dedupe_key LIKE 'SMq-%' ORDER BY id`,
  );
  expect(rows.find((r) => r.dedupe_key === "SMq-a1")).toMatchObject({
    attempts: 2,
    claimed_by: app.broker.nodeID,
  });
  expect(rows.find((r) => r.dedupe_key === "SMq-b1")).toMatchObject({ attempts: 1 });
});

test("retry-inbound: a message given up on is filed again with its attempts reset; other workspaces' stay as they are", async () => {
  const filer = (app.broker.getLocalService("providers") as unknown as { inboundFiler: Poller }).inboundFiler;
  await filer.stop();
  try {
    const from = "+14155550304";
    expect(
      await acceptSms(ctx.workspaceId, twilioId, { from, to: TWILIO_FROM, key: "SMq-f1", text: "lost?" }),
    ).toBe(true);
    // Its last try failed: given up on (no retry), its error kept.
    const [claimed] = await claimInbound("test-node", 10, 60);
    expect(claimed.inbound.text).toBe("lost?");
    await markUnfiled("test-node", [{ id: claimed.id, error: "inbox unreachable", retryInSeconds: null }]);
    expect((await queued("SMq-f1"))[0]).toMatchObject({ filed_at: null });
    expect(await inboundBodies(from)).toEqual([]);
  } finally {
    filer.start();
  }

  expect(await retryInbound(app.broker, asWorkspaceId("another-workspace"))).toEqual({ requeued: 0 });
  const printed: string[] = [];
  const command = operatorCommands((text) => printed.push(text)).find((c) =>
    c.command.startsWith("retry-inbound"),
  )!;
  await command.action(app.broker, { workspaceId: ctx.workspaceId }, { table: () => "" });
  expect(printed).toEqual(["1 inbound message back in the filing queue"]);
  await inboundFiled(app);
  expect(await inboundBodies("+14155550304")).toEqual(["lost?"]);
  const { rows } = await db.query(
    `SELECT attempts, failed_at, filed_at, last_error FROM inbound_queue WHERE dedupe_key = 'SMq-f1'`,
  );
  expect(rows[0]).toMatchObject({ attempts: 1, failed_at: null, last_error: "inbox unreachable" });
  expect(rows[0].filed_at).not.toBeNull();
  // Nothing is given up on any more: a second run requeues nothing.
  expect(await retryInbound(app.broker, ctx.workspaceId as WorkspaceId)).toEqual({ requeued: 0 });
});
