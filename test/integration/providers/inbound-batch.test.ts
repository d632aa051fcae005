import type { ActionHandler, ActionSchema, Context, Middleware } from "moleculer";
import type { Client } from "pg";
import type { TestApp } from "../../helpers/app";
import type { ownerWithWorkspace } from "../../helpers/http";
import { acceptSms, inboundFiled, startSmsInbox, type SmsInbox } from "../../helpers/inbound";
import type { Poller } from "../../../lib/worker";

/**
 * A claimed batch of plain inbound messages is filed set-based
 * (services/providers/inbound-filing.ts): one `contacts.forAddresses`, one
 * `inbox.receiveBatch`, one `events.recordBatch` for the workspace's batch,
 * each conversation's messages in order; a command's conversation goes
 * message by message; a batch whose inbox call fails is filed message by
 * message, a message that fails again is retried alone later, and none is lost.
 */

const TWILIO_FROM = "+15550008888";
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let inbox: SmsInbox;
let twilioId: string;
let db: Client;

/** The actions this node ran, by name, since the test began. */
const calls: string[] = [];
/**
 * Actions that fail while listed: `inbox.receive` only for a message with this text; `events.recordBatch`
 * after it has stored its events (as a call answered after its timeout).
 */
const failing = { receiveBatch: false, receiveText: null as string | null, recordBatchAfter: false };

const probe: Middleware = {
  localAction(next: ActionHandler, action: ActionSchema): ActionHandler {
    return (c: Context) => {
      calls.push(action.name!);
      if (action.name === "inbox.receiveBatch" && failing.receiveBatch)
        return Promise.reject(new Error("the inbox is failing for this test"));
      if (
        action.name === "inbox.receive" &&
        failing.receiveText !== null &&
        (c.params as { text?: string }).text === failing.receiveText
      ) {
        failing.receiveText = null;
        return Promise.reject(new Error("this message fails once"));
      }
      if (action.name === "events.recordBatch" && failing.recordBatchAfter)
        return Promise.resolve(next(c)).then(() => Promise.reject(new Error("timed out after storing")));
      return next(c);
    };
  },
};

beforeAll(async () => {
  inbox = await startSmsInbox({
    publicUrl: "https://cms.example.test",
    from: TWILIO_FROM,
    accountSid: "AC8",
    middlewares: [probe],
  });
  ({ app, ctx, db, providerId: twilioId } = inbox);
});
afterAll(() => inbox?.stop());

const filer = () =>
  (app.broker.getLocalService("providers") as unknown as { inboundFiler: Poller }).inboundFiler;

/** Messages accepted while this node's filer waits, then filed (in one batch: the drain claims up to 100). */
async function fileAsOneBatch(messages: Array<{ from: string; key: string; id?: string; text: string }>) {
  await filer().stop();
  try {
    for (const m of messages)
      expect(
        await acceptSms(ctx.workspaceId, twilioId, {
          from: m.from,
          to: TWILIO_FROM,
          key: m.key,
          text: m.text,
          ...(m.id ? { providerMessageId: m.id } : {}),
        }),
      ).toBe(true);
    calls.length = 0;
    await inboundFiled(app);
  } finally {
    filer().start();
  }
}

const contactsOf = async (phone: string) =>
  (await db.query(`SELECT id FROM contacts WHERE workspace_id = $1 AND phone = $2`, [ctx.workspaceId, phone]))
    .rows as Array<{ id: string }>;

/** The contact's sms threads, each with its inbound bodies in order. */
async function threadsOf(contactId: string) {
  const { rows } = await db.query(
    `SELECT t.id, array_agg(m.body ORDER BY m.created_at, m.id) AS bodies
       FROM inbox_threads t JOIN inbox_messages m ON m.thread_id = t.id AND m.direction = 'inbound'
      WHERE t.workspace_id = $1 AND t.contact_id = $2 AND t.channel = 'sms'
      GROUP BY t.id`,
    [ctx.workspaceId, contactId],
  );
  return rows as Array<{ id: string; bodies: string[] }>;
}

const receivedEvents = async (contactId: string) =>
  (
    await db.query(
      `SELECT metadata FROM events WHERE workspace_id = $1 AND contact_id = $2 AND type = 'sms.message_received'
        ORDER BY timestamp, id`,
      [ctx.workspaceId, contactId],
    )
  ).rows.map((r) => r.metadata as { threadId: string | null; text: string });

const count = (name: string) => calls.filter((c) => c === name).length;

test("two new senders' messages in one batch: one call per area, one contact and one thread per sender, order kept", async () => {
  const ada = "+14155550401";
  const bob = "+14155550402";
  await fileAsOneBatch([
    { from: ada, key: "SMb-a1", text: "ada one" },
    { from: bob, key: "SMb-b1", text: "bob one" },
    { from: ada, key: "SMb-a2", text: "ada two" },
    { from: bob, key: "SMb-b2", text: "bob two" },
    { from: ada, key: "SMb-a3", text: "ada three" },
    { from: bob, key: "SMb-b3", text: "bob three" },
  ]);
  expect(count("contacts.forAddresses")).toBe(1);
  expect(count("inbox.receiveBatch")).toBe(1);
  expect(count("events.recordBatch")).toBe(1);
  expect(count("contacts.forAddress") + count("inbox.receive") + count("events.record")).toBe(0);

  for (const [phone, name] of [
    [ada, "ada"],
    [bob, "bob"],
  ]) {
    const contacts = await contactsOf(phone);
    expect(contacts).toHaveLength(1);
    const threads = await threadsOf(contacts[0].id);
    expect(threads).toEqual([
      { id: expect.any(String), bodies: [`${name} one`, `${name} two`, `${name} three`] },
    ]);
    const events = await receivedEvents(contacts[0].id);
    expect(events.map((e) => e.text)).toEqual([`${name} one`, `${name} two`, `${name} three`]);
    expect(events.every((e) => e.threadId === threads[0].id)).toBe(true);
  }
  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM inbound_queue WHERE dedupe_key LIKE 'SMb-%' AND filed_at IS NOT NULL`,
  );
  expect(rows[0].n).toBe(6);
});

test("a provider message id twice in one batch is filed once; a command's conversation goes message by message", async () => {
  const cy = "+14155550403";
  const dee = "+14155550404";
  await fileAsOneBatch([
    { from: cy, key: "SMd-1", id: "SMd-same", text: "first delivery" },
    { from: dee, key: "SMd-dee-1", text: "hello" },
    { from: cy, key: "SMd-2", id: "SMd-same", text: "first delivery" },
    { from: dee, key: "SMd-dee-2", text: "STOP" },
    { from: cy, key: "SMd-3", text: "a new one" },
  ]);
  expect(count("inbox.receiveBatch")).toBe(1);
  const [contact] = await contactsOf(cy);
  expect(await threadsOf(contact.id)).toEqual([
    { id: expect.any(String), bodies: ["first delivery", "a new one"] },
  ]);

  // The conversation with STOP: its first message filed, STOP answered by its rule (opted out), through the single path.
  expect(count("contacts.forAddress")).toBe(2);
  const [deeContact] = await contactsOf(dee);
  expect((await threadsOf(deeContact.id)).map((t) => t.bodies)).toEqual([["hello"]]);
  const consent = (await ctx.owner.client.get(`${ctx.ws}/contacts/${deeContact.id}/consent`)).body;
  expect(consent.sms).toMatchObject({ status: "opted_out", source: "sms_stop" });
});

test("a batch whose inbox call fails is filed message by message; a message failing again is retried alone later; none is lost", async () => {
  const eve = "+14155550405";
  const fay = "+14155550406";
  failing.receiveBatch = true;
  failing.receiveText = "eve two";
  try {
    await fileAsOneBatch([
      { from: eve, key: "SMf-e1", text: "eve one" },
      { from: fay, key: "SMf-f1", text: "fay one" },
      { from: eve, key: "SMf-e2", text: "eve two" },
      { from: eve, key: "SMf-e3", text: "eve three" },
      { from: fay, key: "SMf-f2", text: "fay two" },
    ]);
  } finally {
    failing.receiveBatch = false;
  }
  expect(count("inbox.receiveBatch")).toBeGreaterThanOrEqual(1);
  expect(count("inbox.receive")).toBeGreaterThanOrEqual(5);
  const { rows } = await db.query(
    `SELECT dedupe_key, attempts, last_error, filed_at FROM inbound_queue WHERE dedupe_key LIKE 'SMf-%' ORDER BY id`,
  );
  expect(rows.every((r) => r.filed_at !== null)).toBe(true);
  // The message that failed again was tried twice (its backoff waited), the others of its conversation after it.
  expect(rows.find((r) => r.dedupe_key === "SMf-e2")).toMatchObject({
    attempts: 2,
    last_error: "this message fails once",
  });
  for (const [phone, bodies] of [
    [eve, ["eve one", "eve two", "eve three"]],
    [fay, ["fay one", "fay two"]],
  ] as const) {
    const contacts = await contactsOf(phone);
    expect(contacts).toHaveLength(1);
    const threads = await threadsOf(contacts[0].id);
    expect(threads.map((t) => t.bodies)).toEqual([bodies]);
    // Each message's event once: the failed batch stored none.
    expect((await receivedEvents(contacts[0].id)).map((e) => e.text)).toEqual(bodies);
  }
});

test("a batch whose events call fails after storing them is filed again message by message: each message and its event once", async () => {
  const hal = "+14155550408";
  failing.recordBatchAfter = true;
  try {
    await fileAsOneBatch([
      { from: hal, key: "SMt-h1", text: "hal one" },
      { from: hal, key: "SMt-h2", text: "hal two" },
    ]);
  } finally {
    failing.recordBatchAfter = false;
  }
  expect(count("events.recordBatch")).toBe(1);
  // The fallback found each message filed (a duplicate) and recorded its event under the message's id: stored already.
  expect(count("events.record")).toBe(2);
  const [contact] = await contactsOf(hal);
  const threads = await threadsOf(contact.id);
  expect(threads.map((t) => t.bodies)).toEqual([["hal one", "hal two"]]);
  expect((await receivedEvents(contact.id)).map((e) => e.text)).toEqual(["hal one", "hal two"]);
});

// Last: the inbox service is taken away and brought back.
test("the inbox gone after this node saw it (an outage, its nodes dropped): the message waits, then is filed in its thread", async () => {
  const gus = "+14155550407";
  await app.broker.destroyService(app.broker.getLocalService("inbox")!);
  await filer().stop();
  try {
    await acceptSms(ctx.workspaceId, twilioId, { from: gus, to: TWILIO_FROM, key: "SMg-1", text: "hello?" });
    expect(await app.broker.call("providers.fileInbound")).toBe(1);
  } finally {
    filer().start();
  }
  const [waiting] = (
    await db.query(`SELECT attempts, last_error, filed_at FROM inbound_queue WHERE dedupe_key = 'SMg-1'`)
  ).rows;
  expect(waiting).toMatchObject({ attempts: 1, filed_at: null });
  expect(waiting.last_error).toMatch(/inbox\.receive/);

  const inbox = (await import("../../../services/inbox/inbox.service")).default;
  app.broker.createService(inbox as unknown as Parameters<typeof app.broker.createService>[0]);
  await app.broker.waitForServices(["inbox"], 10_000);
  await inboundFiled(app);
  const [contact] = await contactsOf(gus);
  expect((await threadsOf(contact.id)).map((t) => t.bodies)).toEqual([["hello?"]]);
  expect((await receivedEvents(contact.id)).map((e) => [e.text, e.threadId !== null])).toEqual([
    ["hello?", true],
  ]);
});
