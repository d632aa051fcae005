import { dropStreams } from "../../helpers/nats";
import { randomHex } from "../../../lib/crypto";
import { newId } from "../../../lib/crypto";
import { sendDomainEnvelope, type DomainEvent } from "../../../lib/domain-events";
import { asWorkspaceId } from "../../../lib/tenancy";
import { publishDomainEvent } from "../../helpers/facts";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/** Domain events over JetStream: a fact published while the webhooks consumer is down is delivered after it restarts. */
const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("Skipping the JetStream webhooks suite: NATS_URL is not set");
const suite = NATS_URL ? describe : describe.skip;

suite("webhooks over NATS JetStream", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let gateway: TestApp;
  let worker: TestApp | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const env = { NATS_URL, NAMESPACE: `wh-${randomHex(4)}`, WEBHOOK_POLL_MS: "200" };
  const startWorker = (nodeID: string) =>
    startApp({ databaseUrl: db.url, services: ["webhooks"], withoutGateway: true, broker: { nodeID }, env });
  /** The gateway routes to the webhooks node (moleculer-web rebuilds aliases on a debounce when a remote service appears; now). */
  const webhooksRouted = async () => {
    await gateway.broker.waitForServices(["webhooks"], 10_000);
    const api = gateway.broker.getLocalService("api") as unknown as {
      routes: Array<{ opts: { autoAliases?: boolean } }>;
      regenerateAutoAliases(route: unknown): void;
    };
    for (const route of api.routes) if (route.opts.autoAliases) api.regenerateAutoAliases(route);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    gateway = await startApp({
      databaseUrl: db.url,
      services: ["api", "auth", "workspaces"],
      broker: { nodeID: "gw" },
      env,
    });
    worker = await startWorker("worker-1");
    await webhooksRouted();
    receiver = await startReceiver();
  }, 30_000);
  afterAll(async () => {
    await receiver?.close();
    await worker?.broker.stop();
    await gateway?.broker.stop();
    await db?.drop();
    await dropStreams(NATS_URL!, env.NAMESPACE);
  });

  test("an event published while the consumer is stopped is delivered once it is back", async () => {
    const ctx = await ownerWithWorkspace(gateway.baseUrl);
    // Created through the gateway on another node: the action call crosses NATS.
    const ep = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
      url: receiver.url(),
      events: ["contact.created"],
    });
    expect(ep.status).toBe(201);

    await publishDomainEvent(gateway.broker, ctx.workspaceId, "contact.created", {
      contactId: "before",
      email: null,
      firstName: null,
      lastName: null,
    });
    await waitFor(() => receiver.received.length === 1, 10_000, "delivery while the consumer runs");

    await worker!.broker.stop();
    worker = undefined;
    await publishDomainEvent(gateway.broker, ctx.workspaceId, "contact.created", {
      contactId: "while-down",
      email: null,
      firstName: null,
      lastName: null,
    });

    worker = await startWorker("worker-2");
    await waitFor(() => receiver.received.length === 2, 15_000, "delivery after the restart");
    expect(JSON.parse(receiver.received[1].body).data.contactId).toBe("while-down");
    expect(receiver.received[1].headers["x-webhook-event"]).toBe("contact.created");
  }, 40_000);

  test("an envelope on the stream twice, and one overlapping it, deliver each fact once", async () => {
    // The first test replaced the webhooks node.
    await webhooksRouted();
    const ctx = await ownerWithWorkspace(gateway.baseUrl);
    const ep = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
      url: receiver.url("/envelope"),
      events: ["envelope.test"],
    });
    expect(ep.status).toBe(201);
    const facts: DomainEvent[] = Array.from({ length: 40 }, (_, n) => ({
      id: newId(),
      workspaceId: asWorkspaceId(ctx.workspaceId),
      type: "envelope.test",
      data: { n },
      occurredAt: new Date().toISOString(),
    }));
    // As JetStream redelivers a message whose ack was lost, and a relay sends again a batch it could not delete.
    await sendDomainEnvelope(gateway.broker, facts.slice(0, 25));
    await sendDomainEnvelope(gateway.broker, facts.slice(0, 25));
    await sendDomainEnvelope(gateway.broker, facts.slice(15, 40));
    const mine = () => receiver.received.filter((r) => r.path === "/envelope");
    await waitFor(() => mine().length >= 40, 15_000, "40 deliveries");
    // Time for any second delivery of a fact to arrive: a sentinel sent after them all comes through first.
    await publishDomainEvent(gateway.broker, ctx.workspaceId, "envelope.test", { n: "sentinel" });
    await waitFor(() => mine().some((r) => JSON.parse(r.body).data.n === "sentinel"), 15_000, "the sentinel");
    const ns = mine()
      .map((r) => JSON.parse(r.body).data.n)
      .filter((n) => n !== "sentinel") as number[];
    expect(ns.sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, n) => n));
  }, 40_000);
});
