import { SYSTEM } from "../../../lib/access";
import { randomHex } from "../../../lib/crypto";
import { startApp, type StartOptions, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp } from "../../helpers/http";
import { dropStreams } from "../../helpers/nats";
import { newContact } from "../providers/fixtures";

/**
 * Two replicas of every service (same database) over a real transporter:
 * inbound messages for one contact arriving on both at once make one
 * thread, assigned once by a round robin (one turn taken, one notification),
 * and each provider message stored once. Over NATS when NATS_URL is set,
 * and always over Moleculer's Fake transporter (which serialises every packet).
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("inbox replicas.test.ts: the NATS suite is skipped: NATS_URL is not set");

const SERVICES = [
  "auth",
  "workspaces",
  "contacts",
  "events",
  "segments",
  "templates",
  "messages",
  "providers",
  "crm",
  "inbox",
];

function replicaSuite(transport: "NATS" | "Fake") {
  let a: TestApp;
  let b: TestApp;
  const run = randomHex(4);

  beforeAll(async () => {
    const env: StartOptions["env"] =
      transport === "NATS" ? { NATS_URL, NAMESPACE: `inbox-${run}` } : { NAMESPACE: `inbox-fake-${run}` };
    const transporter = transport === "NATS" ? NATS_URL : "Fake";
    b = await startApp({
      env,
      services: SERVICES,
      withoutGateway: true,
      broker: { nodeID: `b-${run}`, transporter },
    });
    a = await startApp({
      env,
      services: ["api", ...SERVICES],
      databaseUrl: b.databaseUrl,
      broker: { nodeID: `a-${run}`, transporter },
      waitForServices: SERVICES,
    });
    await a.broker.waitForServices([{ name: "inbox" }], 10_000);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    if (transport === "NATS") await dropStreams(NATS_URL!, `inbox-${run}`);
  });

  test("concurrent inbound for one contact on two replicas: one thread, assigned once, auto-answered once", async () => {
    const ctx = await ownerWithWorkspace(a.baseUrl);
    const agent = await signUp(a.baseUrl, "Agent");
    const c = ctx.owner.client;
    await c.post(`${ctx.ws}/members`, { email: agent.email, role: "MEMBER" });
    const rule = await c.post(`${ctx.ws}/inbox/assignment-rules`, {
      name: "Both",
      type: "round_robin",
      config: { memberIds: [ctx.owner.id, agent.id] },
    });
    expect(rule.status).toBe(201);
    const ack = await c.post(`${ctx.ws}/inbox/auto-replies`, { name: "Ack", channel: "sms", body: "Got it" });
    expect(ack.status).toBe(201);
    const contactId = await newContact(c, ctx.ws, { phone: "+14155550177" });
    const receive = (broker: TestApp["broker"], node: string, i: number) =>
      broker.call(
        "inbox.receive",
        {
          channel: "sms",
          contactId,
          providerId: "prov-replicas",
          from: "+14155550177",
          to: "+15550000000",
          text: `message ${i}`,
          // Each message twice, once on each replica: a provider retrying while the first is in flight.
          providerMessageId: `SMr-${i}`,
        },
        { nodeID: node, meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
      ) as Promise<{ threadId: string; duplicate: boolean }>;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => [
        receive(a.broker, `a-${run}`, i),
        receive(b.broker, `b-${run}`, i),
      ]).flat(),
    );
    expect(new Set(answers.map((r) => r.threadId)).size).toBe(1);
    expect(answers.filter((r) => r.duplicate)).toHaveLength(8);

    const threads = (await c.get(`${ctx.ws}/inbox?contactId=${contactId}`)).body.data;
    expect(threads).toHaveLength(1);
    expect([ctx.owner.id, agent.id]).toContain(threads[0].assigneeId);
    expect(threads[0].unread).toBe(8);
    const detail = (await agent.client.get(`${ctx.ws}/inbox/${threads[0].id}`)).body;
    const bodies = (direction: string) =>
      detail.messages
        .filter((m: { direction: string }) => m.direction === direction)
        .map((m: { body: string }) => m.body);
    expect(bodies("inbound").sort()).toEqual(Array.from({ length: 8 }, (_, i) => `message ${i}`).sort());
    // Sixteen receives at once, on two replicas: the auto-reply answered the thread once.
    expect(bodies("outbound")).toEqual(["Got it"]);
    const assigned = async (client: typeof c) =>
      (await client.get(`${ctx.ws}/notifications?type=inbox.assigned`)).body.data.length;
    expect((await assigned(c)) + (await assigned(agent.client))).toBe(1);

    // The round robin took one turn: the next contact's thread goes to the other member.
    const next = await newContact(c, ctx.ws, { phone: "+14155550178" });
    const other = (await a.broker.call(
      "inbox.receive",
      {
        channel: "sms",
        contactId: next,
        providerId: "prov-replicas",
        from: "+14155550178",
        to: "+1",
        text: "hi",
      },
      { meta: { principal: SYSTEM, workspaceId: ctx.workspaceId } },
    )) as { threadId: string };
    const second = (await c.get(`${ctx.ws}/inbox/${other.threadId}`)).body;
    expect(second.assigneeId).not.toBe(threads[0].assigneeId);
    expect([ctx.owner.id, agent.id]).toContain(second.assigneeId);
  });
}

(NATS_URL ? describe : describe.skip)("inbox replicas over NATS", () => replicaSuite("NATS"));
describe("inbox replicas over the Fake transporter", () => replicaSuite("Fake"));
