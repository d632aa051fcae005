import { connect, type NatsConnection } from "nats";
import { QueryTypes } from "sequelize";
import { randomHex } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { dropStreams } from "../../helpers/nats";
import { waitFor } from "../../helpers/wait";
import { FakeExternalTool } from "./fake-externaltool";

/**
 * The external tool's API key stays in the process that calls the tool:
 * the integrations service on its own broker, the gateway and workspaces
 * (where the key is written and sealed) on another, over NATS, every packet
 * of the namespace read by a raw subscription to `>`. A preview, an import
 * and a push reach the fake with the key; no payload holds it, plain or in
 * its Basic form.
 */

const NATS_URL = process.env.NATS_URL;
if (!NATS_URL)
  console.log(
    "integrations/secrets-wire.test.ts: skipped: NATS_URL is not set (the suite needs a real NATS)",
  );

const API_KEY = "wire-key-7d1e9b0c55-us21";

(NATS_URL ? describe : describe.skip)("the external tool's key over NATS", () => {
  const run = randomHex(4);
  const namespace = `wire-ext-${run}`;
  let integrationsNode: TestApp;
  let gatewayNode: TestApp;
  let nats: NatsConnection;
  const payloads: string[] = [];
  const fake = new FakeExternalTool();

  beforeAll(async () => {
    await fake.start();
    fake.apiKey = API_KEY;
    fake.lists.set("L1", [
      { email_address: "wire1@list.test", status: "subscribed", merge_fields: { FNAME: "Wire" }, tags: [] },
      { email_address: "wire2@list.test", status: "cleaned", merge_fields: {}, tags: [] },
    ]);
    nats = await connect({ servers: NATS_URL });
    const all = nats.subscribe(">");
    void (async () => {
      for await (const message of all) payloads.push(Buffer.from(message.data).toString("utf8"));
    })();
    const env = { NATS_URL, NAMESPACE: namespace };
    integrationsNode = await startApp({
      env,
      services: ["integrations", "contacts", "segments"],
      withoutGateway: true,
      broker: { nodeID: `integrations-${run}`, transporter: NATS_URL },
    });
    gatewayNode = await startApp({
      env,
      services: ["api", "auth", "workspaces", "jobs"],
      databaseUrl: integrationsNode.databaseUrl,
      broker: { nodeID: `gateway-${run}`, transporter: NATS_URL },
      waitForServices: ["integrations", "contacts"],
    });
  });

  afterAll(async () => {
    await gatewayNode?.stop();
    await integrationsNode?.stop();
    await nats?.close();
    await fake.stop();
    if (NATS_URL) await dropStreams(NATS_URL, namespace);
  });

  test("preview, import and push reach the tool with the key, and no broker message holds it", async () => {
    expect(gatewayNode.broker.getLocalService("integrations")).toBeFalsy();
    const { owner, ws, workspaceId } = await ownerWithWorkspace(gatewayNode.baseUrl);
    const c = owner.client;
    await waitFor(
      async () =>
        (await c.post(`${ws}/integrations/externaltool/preview`, {})).status === 400 ? true : undefined,
      10_000,
      "the integrations node's routes at the gateway",
    );
    const saved = await c.patch(ws, {
      settings: { externaltool: { baseUrl: fake.baseUrl, apiKey: API_KEY, listId: "L1" } },
    });
    expect(saved.body.settings.externaltool.apiKey).toBe("••••us21");

    expect((await c.post(`${ws}/integrations/externaltool/preview`, {})).body.total).toBe(2);
    const imported = await c.post(`${ws}/integrations/externaltool/import`, {});
    expect(imported.status).toBe(202);
    expect(await finishedJob(c, ws, imported.body.jobId)).toMatchObject({
      status: "completed",
      result: { created: 2, updated: 0, skipped: 0 },
    });
    const ids = (
      await (
        await database()
      ).query<{ id: string }>(`SELECT id FROM contacts WHERE workspace_id = $1`, {
        bind: [workspaceId],
        type: QueryTypes.SELECT,
      })
    ).map((r) => r.id);
    const pushed = await c.post(`${ws}/integrations/externaltool/contacts`, { contactIds: ids });
    expect(pushed.body).toEqual({ pushed: 2, failed: [] });

    const basic = Buffer.from(`anystring:${API_KEY}`).toString("base64");
    expect(fake.requests.length).toBeGreaterThanOrEqual(4);
    expect(fake.requests.every((r) => r.authorization === `Basic ${basic}`)).toBe(true);
    // The broker carried the work (the hops are real), and not the key.
    expect(payloads.some((p) => p.includes("contacts.identify"))).toBe(true);
    expect(payloads.some((p) => p.includes("integrations.externaltoolContacts"))).toBe(true);
    for (const secret of [API_KEY, Buffer.from(API_KEY).toString("base64"), basic])
      expect({ secret, leaks: payloads.filter((p) => p.includes(secret)).length }).toEqual({
        secret,
        leaks: 0,
      });
  });
});
