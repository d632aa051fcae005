import type { ServiceBroker } from "moleculer";
import { Client } from "pg";
import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { ENVELOPE_MAX_BYTES, factsOf, type DomainEnvelope } from "../../../lib/domain-events";
import { stageDomainEvents } from "../../../lib/outbox";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * The transactional outbox between the writes and the domain-events channel,
 * with two brokers (replicas) on one database and no transporter: each
 * broker's relay sends to its own in-memory channel, so which relay sent a
 * fact is visible. A runs the gateway and the writing services, B only webhooks.
 */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let a: TestApp;
let b: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const stopped = new Set<TestApp>();
const env = { OUTBOX_POLL_MS: "200", WEBHOOK_POLL_MS: "200" };

type Send = (name: string, payload: unknown) => Promise<void>;
const channelOf = (broker: ServiceBroker) => broker as ServiceBroker & { sendToChannel: Send };

/** Replace a broker's channel send (its relay's way out) for the rest of a test; returns the original. */
function wrapSend(
  broker: ServiceBroker,
  wrapper: (original: Send, name: string, payload: unknown) => Promise<void>,
) {
  const original = channelOf(broker).sendToChannel;
  channelOf(broker).sendToChannel = (name, payload) => wrapper(original, name, payload);
  return () => (channelOf(broker).sendToChannel = original);
}

/** Requests for `event`, to one endpoint's path when given (an event may go to several endpoints). */
const received = (event: string, path?: string) =>
  receiver.received.filter((r) => r.headers["x-webhook-event"] === event && (!path || r.path === path));

async function staged(where = "true", replacements: Record<string, unknown> = {}) {
  const [row] = await (
    await database()
  ).query<{ n: string }>(`SELECT count(*) AS n FROM domain_event_outbox WHERE ${where}`, {
    type: QueryTypes.SELECT,
    replacements,
  });
  return Number(row.n);
}

async function endpoint(path: string, events: string[]) {
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: receiver.url(path), events });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

/** Stage one fact in a committed transaction and wait for its delivery: everything staged before it has been relayed. */
async function sentinel(type: string) {
  await (await database()).transaction((t) => stageDomainEvents(t, ctx.workspaceId, [{ type, data: {} }]));
  await waitFor(() => received(type).length === 1, 5000, type);
}

beforeAll(async () => {
  db = await createTestDatabase();
  a = await startApp({
    databaseUrl: db.url,
    services: ["api", "auth", "workspaces", "events", "contacts", "webhooks"],
    broker: { nodeID: "node-a" },
    env,
  });
  b = await startApp({
    databaseUrl: db.url,
    services: ["webhooks"],
    withoutGateway: true,
    broker: { nodeID: "node-b" },
    env,
  });
  receiver = await startReceiver();
  ctx = await ownerWithWorkspace(a.baseUrl);
  // For the last test, which runs after the gateway's broker is gone.
  await endpoint("/restart", ["left.behind"]);
});
afterAll(async () => {
  await receiver.close();
  for (const app of [b, a]) if (app && !stopped.has(app)) await app.broker.stop();
  await db.drop();
});

/** A fact row as a write of a process that died (or of a stopped cluster) left it: plain SQL, no relay woken. */
async function stageBehindTheApp(type: string, data: Record<string, unknown>) {
  const sql = new Client({ connectionString: db.url });
  await sql.connect();
  await sql.query(`INSERT INTO domain_event_outbox (workspace_id, type, data) VALUES ($1, $2, $3)`, [
    ctx.workspaceId,
    type,
    JSON.stringify(data),
  ]);
  await sql.end();
}

test("an event's fact is staged by its insert and delivered with every recorded field; a rolled-back write stages nothing", async () => {
  await endpoint("/activity", ["purchase", "contact.updated", "rolled.back", "sentinel.d"]);
  const contact = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: "buyer@example.test" });
  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, {
    type: "purchase",
    contactId: contact.body.id,
    metadata: { amount: 3 },
    sessionId: "s",
    pageUrl: "https://shop.example/p",
    referrer: "r",
    utmSource: "us",
    utmMedium: "um",
    utmCampaign: "uc",
  });
  expect(posted.status).toBe(201);
  await waitFor(() => received("purchase").length === 1, 5000, "the purchase delivery");
  expect(JSON.parse(received("purchase")[0].body).data).toEqual({
    eventId: posted.body.id,
    contactId: contact.body.id,
    type: "purchase",
    metadata: { amount: 3 },
    timestamp: posted.body.timestamp,
    sessionId: "s",
    pageUrl: "https://shop.example/p",
    referrer: "r",
    utmSource: "us",
    utmMedium: "um",
    utmCampaign: "uc",
  });

  // A transaction that staged a fact and then failed: the fact goes with it.
  const sequelize = await database();
  await expect(
    sequelize.transaction(async (t) => {
      await stageDomainEvents(t, ctx.workspaceId, [{ type: "rolled.back", data: {} }]);
      throw new Error("the write failed");
    }),
  ).rejects.toThrow("the write failed");
  // A contact update refused mid-transaction (the email belongs to another contact): no contact.updated.
  const other = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: "taken@example.test" });
  const refused = await ctx.owner.client.patch(`${ctx.ws}/contacts/${other.body.id}`, {
    email: "buyer@example.test",
  });
  expect(refused.status).toBe(409);

  await sentinel("sentinel.d");
  expect(received("rolled.back")).toHaveLength(0);
  expect(received("contact.updated")).toHaveLength(0);
  // The relay deletes a sent fact once the channel holds it, which may be after its delivery arrived.
  await waitFor(async () => (await staged()) === 0, 5000, "the outbox to empty");
});

test("a failed send leaves the facts staged (the writes still answer), counted and on backoff, and a later pass sends them once", async () => {
  await endpoint("/down", ["contact.created", "while.down", "sentinel.b"]);
  const restore = [a, b].map((app) =>
    wrapSend(app.broker, async () => {
      throw new Error("channel unavailable");
    }),
  );
  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: "down@example.test" });
  expect(created.status).toBe(201);
  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "while.down" });
  expect(posted.status).toBe(201);
  // Retried after 200, 400, 800 ms (the poll interval, doubling): three attempts each, the error kept.
  const contactFact = "type = 'contact.created' AND data ->> 'contactId' = :id";
  const eventFact = "type = 'while.down' AND data ->> 'eventId' = :id";
  const failing = `attempts >= 3 AND last_error = 'channel unavailable' AND available_at > occurred_at`;
  await waitFor(
    async () =>
      (await staged(`${contactFact} AND ${failing}`, { id: created.body.id })) === 1 &&
      (await staged(`${eventFact} AND ${failing}`, { id: posted.body.id })) === 1,
    5000,
    "three failed sends of each fact",
  );

  for (const undo of restore) undo();
  await waitFor(
    () => received("while.down").length === 1,
    5000,
    "the event's delivery after the channel is back",
  );
  await waitFor(
    () =>
      received("contact.created", "/down").some((r) => JSON.parse(r.body).data.contactId === created.body.id),
    5000,
    "contact.created",
  );
  await sentinel("sentinel.b");
  expect(received("while.down")).toHaveLength(1);
  expect(
    received("contact.created", "/down").filter((r) => JSON.parse(r.body).data.contactId === created.body.id),
  ).toHaveLength(1);
  expect(await staged()).toBe(0);
});

test("embedded, a fact leaves the outbox only when its consumer committed: a failing consumer keeps it staged, without holding up the facts beside it", async () => {
  await endpoint("/consumer", ["poison.test", "healthy.test", "held.test", "sentinel.c"]);
  const sequelize = await database();
  // The fan-out's own statement fails for one type: a consumer error, not a channel error.
  await sequelize.query(
    `ALTER TABLE webhook_deliveries ADD CONSTRAINT outbox_test_poison CHECK (event <> 'poison.test') NOT VALID`,
  );
  try {
    await sequelize.transaction((t) =>
      stageDomainEvents(t, ctx.workspaceId, [
        { type: "poison.test", data: {} },
        ...Array.from({ length: 5 }, (_, n) => ({ type: "healthy.test", data: { n } })),
      ]),
    );
    await waitFor(() => received("healthy.test").length === 5, 5000, "the healthy facts");
    await waitFor(
      async () =>
        (await staged(
          "type = 'poison.test' AND attempts >= 2 AND last_error LIKE '%outbox_test_poison%'",
        )) === 1,
      5000,
      "the failing fact kept, its attempts counted",
    );
  } finally {
    await sequelize.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT outbox_test_poison`);
  }
  await waitFor(() => received("poison.test").length === 1, 5000, "the fact once its consumer recovers");

  // A consumer still working (its insert waits on a lock): the fact is still staged, not yet acknowledged.
  const locker = new Client({ connectionString: db.url });
  await locker.connect();
  try {
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE");
    await sequelize.transaction((t) =>
      stageDomainEvents(t, ctx.workspaceId, [{ type: "held.test", data: {} }]),
    );
    // The relay has sent it (it holds the row until the consumer commits) and the consumer waits on the lock.
    await waitFor(
      async () =>
        (
          await sequelize.query(
            `SELECT id FROM domain_event_outbox WHERE type = 'held.test' FOR UPDATE SKIP LOCKED`,
            { type: QueryTypes.SELECT },
          )
        ).length === 0,
      15_000,
      "the relay to hold the fact while its consumer waits",
    );
    expect(await staged("type = 'held.test'")).toBe(1);
    await locker.query("COMMIT");
  } finally {
    await locker.end();
  }
  await waitFor(() => received("held.test").length === 1, 5000, "the held fact");
  await sentinel("sentinel.c");
  expect(received("healthy.test")).toHaveLength(5);
  expect(received("poison.test")).toHaveLength(1);
  expect(received("held.test")).toHaveLength(1);
  expect(await staged()).toBe(0);
});

test("two relays over one outbox send each fact once, each taking rows the other does not hold", async () => {
  const ep = await endpoint("/pair", ["pair.test"]);
  const sentBy = new Map<string, string[]>();
  const restore = [a, b].map((app) =>
    wrapSend(app.broker, async (original, name, payload) => {
      for (const { id } of factsOf(payload as DomainEnvelope))
        sentBy.set(id, [...(sentBy.get(id) ?? []), app.broker.nodeID]);
      // Slow sends keep a batch's rows locked while the other relay takes the next ones.
      await new Promise((r) => setTimeout(r, 100));
      await original(name, payload);
    }),
  );
  const facts = Array.from({ length: 600 }, (_, n) => ({ type: "pair.test", data: { n } }));
  await (await database()).transaction((t) => stageDomainEvents(t, ctx.workspaceId, facts));

  const sequelize = await database();
  const fannedOut = async () =>
    (
      await sequelize.query<{ n: string; facts: string }>(
        `SELECT count(*) AS n, count(DISTINCT source_event_id) AS facts FROM webhook_deliveries WHERE endpoint_id = :id`,
        { type: QueryTypes.SELECT, replacements: { id: ep.id } },
      )
    )[0];
  await waitFor(async () => Number((await fannedOut()).n) === 600, 15_000, "600 deliveries queued");
  for (const undo of restore) undo();
  expect(await fannedOut()).toEqual({ n: "600", facts: "600" });
  expect(sentBy.size).toBe(600);
  expect([...sentBy.values()].every((nodes) => nodes.length === 1)).toBe(true);
  const byNode = (node: string) => [...sentBy.values()].filter(([n]) => n === node).length;
  expect(byNode("node-a")).toBeGreaterThan(0);
  expect(byNode("node-b")).toBeGreaterThan(0);
  await waitFor(() => received("pair.test").length === 600, 30_000, "600 requests");
  expect(new Set(received("pair.test").map((r) => JSON.parse(r.body).data.n)).size).toBe(600);
  expect(await staged()).toBe(0);
}, 60_000);

test("a pass's facts go as envelopes of at most 256 KB, in staging order, each fact delivered once", async () => {
  await endpoint("/big", ["big.test"]);
  const envelopes: Array<{ bytes: number; ns: number[] }> = [];
  // Either broker's relay may take the batch (a commit wakes every relay of the process).
  const restore = [a, b].map((app) =>
    wrapSend(app.broker, async (original, name, payload) => {
      const facts = factsOf(payload as DomainEnvelope).filter((fact) => fact.type === "big.test");
      if (facts.length)
        envelopes.push({
          bytes: Buffer.byteLength(JSON.stringify(payload)),
          ns: facts.map((fact) => fact.data.n as number),
        });
      await original(name, payload);
    }),
  );
  // 300 facts of about 3 KB (with a multi-byte character) in one transaction: one relay batch, about 900 KB.
  const pad = "é".repeat(1500);
  const facts = Array.from({ length: 300 }, (_, n) => ({ type: "big.test", data: { n, pad } }));
  try {
    await (await database()).transaction((t) => stageDomainEvents(t, ctx.workspaceId, facts));
    await waitFor(() => received("big.test").length === 300, 30_000, "300 requests");
  } finally {
    for (const undo of restore) undo();
  }
  expect(envelopes.length).toBeGreaterThanOrEqual(4);
  for (const envelope of envelopes) expect(envelope.bytes).toBeLessThanOrEqual(ENVELOPE_MAX_BYTES);
  // Not split into envelopes of one: each holds as many as the bound allows, about 256 / 3 facts.
  expect(Math.max(...envelopes.map((e) => e.ns.length))).toBeGreaterThan(60);
  for (const { ns } of envelopes) expect(ns).toEqual([...ns].sort((x, y) => x - y));
  expect(envelopes.flatMap((e) => e.ns).sort((x, y) => x - y)).toEqual(
    Array.from({ length: 300 }, (_, n) => n),
  );
  expect(new Set(received("big.test").map((r) => JSON.parse(r.body).data.n)).size).toBe(300);
  expect(await staged()).toBe(0);
}, 60_000);

test("facts a broker staged but never sent (it died) are sent by another broker's relay, once", async () => {
  await endpoint("/orphan", ["contact.created", "orphan.test", "sentinel.a"]);
  // A's relay cannot get its fact out, then A goes away: a crash between the commit and the send.
  const restore = wrapSend(a.broker, async () => {
    throw new Error("node-a is dying");
  });
  const ownSends: string[] = [];
  const watchB = wrapSend(b.broker, async (original, name, payload) => {
    ownSends.push(...factsOf(payload as DomainEnvelope).map((fact) => fact.type));
    await original(name, payload);
  });
  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: "orphan@example.test" });
  expect(created.status).toBe(201);
  await a.broker.stop();
  stopped.add(a);
  restore();

  // And a row committed by a process that died before even waking its relay: only B's poll finds it.
  await stageBehindTheApp("orphan.test", { n: 1 });

  const createdHere = () =>
    received("contact.created", "/orphan").filter(
      (r) => JSON.parse(r.body).data.contactId === created.body.id,
    );
  await waitFor(() => createdHere().length === 1, 5000, "the contact.created A never sent");
  await waitFor(() => received("orphan.test").length === 1, 5000, "the row found by B's poll");
  await sentinel("sentinel.a");
  watchB();
  expect(createdHere()).toHaveLength(1);
  expect(received("orphan.test")).toHaveLength(1);
  expect(ownSends).toEqual(expect.arrayContaining(["contact.created", "orphan.test"]));
  expect(await staged()).toBe(0);
});

test("facts left by a stopped cluster are sent when a broker starts, once its channels are subscribed", async () => {
  await b.broker.stop();
  stopped.add(b);
  // No broker runs: the row is written as a write of the stopped cluster left it.
  await stageBehindTheApp("left.behind", {});
  // Its relay starts with its services; the in-memory channel would drop a send made before it subscribed.
  const c = await startApp({
    databaseUrl: db.url,
    services: ["webhooks"],
    withoutGateway: true,
    broker: { nodeID: "node-c" },
    env,
  });
  try {
    await waitFor(() => received("left.behind", "/restart").length === 1, 5000, "the fact left behind");
    expect(await staged()).toBe(0);
  } finally {
    await c.broker.stop();
  }
});
