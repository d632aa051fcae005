import type { Context, Middleware } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { PERIODIC_STEPS } from "../../../lib/periodic-steps";
import { allServiceFiles, serviceFileName, startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { dropStreams } from "../../helpers/nats";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * The cluster shape at its finest grain: every service file under services/
 * (as `SERVICES=<area>/<file>` loads it in moleculer-runner) in a broker of
 * its own, all over the local NATS in one namespace, the gateway alone on a
 * last one. Requests through the gateway reach every area, and a journey
 * crosses them (event, campaign trigger, message send through the provider,
 * webhook delivery, scoring), so a service that assumed another one local
 * fails here. Each broker records the actions it ran, to show each ran on
 * its own node.
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL) console.log("every-service-alone.test.ts: skipped: NATS_URL is not set");

const run = randomHex(4);
const NAMESPACE = `alone-${run}`;
const CRON_SECRET = `cron-${run}`;
const FILES = allServiceFiles().map(serviceFileName);
const nodeOf = (file: string) => `${file.replace("/", "-")}-${run}`;
const segment = {
  name: "Few",
  filter: { match: "all", conditions: [{ field: "attributes.n", operator: "lt", value: 5 }] },
};
const form = {
  name: "Leads",
  fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
};

interface Handled {
  service: string;
  node: string;
}
const handled: Handled[] = [];
const recorder = {
  name: "Recorder",
  localAction(
    next: (ctx: Context) => Promise<unknown>,
    action: { name: string; service?: { name: string } },
  ) {
    return (ctx: Context) => {
      handled.push({ service: action.service?.name ?? action.name.split(".")[0], node: ctx.broker.nodeID });
      return next(ctx);
    };
  },
} as unknown as Middleware;

(NATS_URL ? describe : describe.skip)("every service in a broker of its own, over NATS", () => {
  const apps = new Map<string, TestApp>();
  /** The file that defines a service, found from the running brokers. */
  const fileOf = (service: string) =>
    [...apps].find(([, app]) => app.broker.getLocalService(service))?.[0] ?? `no file for ${service}`;
  let gateway: TestApp;
  let dropDatabase: () => Promise<void>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    const db = await createTestDatabase();
    dropDatabase = db.drop;
    const env = {
      NATS_URL,
      NAMESPACE,
      CRON_SECRET,
      MESSAGE_POLL_MS: "100",
      WEBHOOK_POLL_MS: "100",
      CAMPAIGN_POLL_MS: "100",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    };
    // The environment is the same for every broker, so they may start together.
    await Promise.all(
      FILES.filter((file) => file !== "api/api").map(async (file) => {
        apps.set(
          file,
          await startApp({
            env,
            files: [file],
            databaseUrl: db.url,
            broker: { nodeID: nodeOf(file), transporter: NATS_URL },
            middlewares: [recorder],
          }),
        );
      }),
    );
    gateway = await startApp({
      env,
      files: ["api/api"],
      databaseUrl: db.url,
      broker: { nodeID: nodeOf("api/api"), transporter: NATS_URL },
      waitForServices: [...apps.values()].flatMap((app) =>
        app.broker.services.map((s) => s.name).filter((name) => !name.startsWith("$")),
      ),
    });
    ctx = await ownerWithWorkspace(gateway.baseUrl);
    // The gateway's routes to other nodes' actions are built once it has seen their services.
    await waitFor(
      async () => (await ctx.owner.client.get(`${ctx.ws}/companies`)).status === 200,
      20_000,
      "the gateway's routes to every node",
    );
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([...apps.values()].map((app) => app.stop()));
    await dropDatabase?.();
    await receiver?.close();
    if (NATS_URL) await dropStreams(NATS_URL, NAMESPACE);
  });

  test("each service file runs on its own node, and the gateway sees each there only", () => {
    expect(apps.size).toBe(FILES.length - 1);
    const seen = gateway.broker.registry.getServiceList({
      onlyAvailable: true,
      skipInternal: true,
    }) as unknown as Array<{
      name: string;
      nodeID: string;
    }>;
    for (const [file, app] of apps) {
      const own = app.broker.services.map((s) => s.name).filter((name) => !name.startsWith("$"));
      expect({ file, own }).toEqual({ file, own: [expect.any(String)] });
      expect({ file, nodes: seen.filter((s) => s.name === own[0]).map((s) => s.nodeID) }).toEqual({
        file,
        nodes: [nodeOf(file)],
      });
    }
  });

  test("a journey across nodes: an event starts a campaign whose message is sent, scored and announced by webhook", async () => {
    const c = ctx.owner.client;
    const ws = ctx.ws;
    const hook = await c.post(`${ws}/webhooks`, {
      name: "sent",
      url: receiver.url("/sent"),
      events: ["message.sent"],
    });
    expect(hook.status).toBe(201);
    const contact = await c.post(`${ws}/contacts`, { email: "mia@example.com", firstName: "Mia" });
    expect(contact.status).toBe(201);
    const contactId = contact.body.id;
    expect(
      (await c.post(`${ws}/scoring-rules`, { name: "shipped", eventType: "order_shipped", points: 5 }))
        .status,
    ).toBe(201);
    const template = await c.post(`${ws}/templates`, {
      name: "Shipped",
      channel: "email",
      content: { subject: "Shipped, {{ contact.firstName }}", html: "<p>On its way</p>" },
    });
    expect(template.status).toBe(201);
    const campaign = await c.post(`${ws}/campaigns`, {
      name: "Shipped",
      workflow: {
        nodes: [
          { id: "entry", type: "entry", config: {} },
          { id: "notify", type: "send", config: { channel: "email", templateId: template.body.id } },
          { id: "done", type: "exit", config: {} },
        ],
        edges: [
          { from: "entry", to: "notify" },
          { from: "notify", to: "done" },
        ],
      },
    });
    expect(campaign.status).toBe(201);
    const campaignId = campaign.body.id;
    expect(
      (
        await c.post(`${ws}/campaigns/${campaignId}/triggers`, {
          type: "event",
          config: { eventType: "order_shipped" },
        })
      ).status,
    ).toBe(201);
    expect((await c.post(`${ws}/campaigns/${campaignId}/execute`)).status).toBe(200);

    expect((await c.post(`${ws}/events`, { type: "order_shipped", contactId })).status).toBe(201);

    const sent = await waitFor(
      async () => {
        const [m] = (await c.get(`${ws}/messages?campaignId=${campaignId}`)).body.data;
        return m?.status === "sent" ? m : undefined;
      },
      15_000,
      "the campaign's message sent",
    );
    expect(sent).toMatchObject({ channel: "email", contactId, providerType: "log" });
    expect((await c.get(`${ws}/messages/${sent.id}`)).body.content.subject).toBe("Shipped, Mia");
    const delivered = await waitFor(
      () => receiver.received.find((r) => r.path === "/sent"),
      15_000,
      "message.sent delivered",
    );
    expect(JSON.parse(delivered.body)).toMatchObject({
      event: "message.sent",
      data: { contactId, messageId: sent.id, campaignId },
    });
    await waitFor(
      async () => (await c.get(`${ws}/contacts/${contactId}/scores`)).body.score === 5,
      15_000,
      "the event scored",
    );
  });

  test("one request per area through the gateway; every service answers from its own node", async () => {
    const c = ctx.owner.client;
    const ws = ctx.ws;
    const probes: Array<[string, () => ReturnType<typeof c.get>, number]> = [
      ["workspaces", () => c.get(ws), 200],
      ["auth", () => c.get("/api/auth/session"), 200],
      ["contacts", () => c.get(`${ws}/contacts`), 200],
      ["customFields", () => c.get(`${ws}/custom-fields`), 200],
      ["stages", () => c.get(`${ws}/stages`), 200],
      ["companies", () => c.post(`${ws}/companies`, { name: "Acme Ltd" }), 201],
      ["crm", () => c.get(`${ws}/notifications`), 200],
      ["deals", () => c.get(`${ws}/deals`), 200],
      ["pipelines", () => c.get(`${ws}/pipelines`), 200],
      ["savedViews", () => c.get(`${ws}/saved-views`), 200],
      ["tasks", () => c.post(`${ws}/tasks`, { title: "Call back" }), 201],
      ["segments", () => c.post(`${ws}/segments`, segment), 201],
      ["forms", () => c.post(`${ws}/forms`, form), 201],
      ["content", () => c.get(`${ws}/landing-pages`), 200],
      ["integrations", () => c.post(`${ws}/integrations/externaltool/preview`, { listId: "l1" }), 400],
      ["analytics", () => c.get(`${ws}/analytics`), 200],
      ["push", () => c.get(`${ws}/push`), 200],
      ["inbox", () => c.get(`${ws}/inbox`), 200],
      ["jobs", () => c.get(`${ws}/jobs`), 200],
      ["providers", () => c.get(`${ws}/providers/email`), 200],
      ["templates", () => c.get(`${ws}/templates`), 200],
      ["messages", () => c.get(`${ws}/messages`), 200],
      ["campaigns", () => c.get(`${ws}/campaigns`), 200],
      ["events", () => c.get(`${ws}/events`), 200],
      ["webhooks", () => c.get(`${ws}/webhooks/deliveries`), 200],
      ["scoring", () => c.get(`${ws}/scoring-rules`), 200],
    ];
    for (const [service, probe, status] of probes) {
      handled.length = 0;
      const res = await probe();
      expect({ service, status: res.status, body: res.status === status ? "" : res.text }).toEqual({
        service,
        status,
        body: "",
      });
      const own = handled.filter((h) => h.service === service);
      expect({ service, ran: own.length > 0 }).toEqual({ service, ran: true });
      for (const h of own)
        expect({ service, node: h.node }).toEqual({ service, node: nodeOf(fileOf(service)) });
    }
  });

  test("the cron tick runs every periodic step on the node of its owner", async () => {
    const res = await gateway.http().get("/api/cron/tick", { bearer: CRON_SECRET });
    expect(res.status).toBe(200);
    for (const step of PERIODIC_STEPS)
      expect({ step: step.action, result: res.body.results[step.action] }).not.toEqual({
        step: step.action,
        result: "not deployed",
      });
  });
});
