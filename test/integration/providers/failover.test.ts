import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";
import { newContact } from "./fixtures";

/**
 * Failover: past PROVIDER_FAILOVER_THRESHOLD transient failures the default
 * provider is `failing` and sends go to the next one; after the probe
 * interval a batch probes it, and an accepted send makes it active again.
 * Each switch shows in the list answer and the audit log.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let fake: Awaited<ReturnType<typeof startReceiver>>;
let primaryUp = false;
let primary: string;
let secondary: string;

beforeAll(async () => {
  fake = await startReceiver((req, i) =>
    req.path.startsWith("/primary") && !primaryUp
      ? { status: 503, body: '{"errors":[{"message":"Service Unavailable"}]}' }
      : { status: 202, body: "", headers: { "x-message-id": `${req.path.split("/")[1]}-${i}` } },
  );
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "templates", "messages", "providers"],
    env: {
      MESSAGE_POLL_MS: "50",
      MESSAGE_RETRY_DELAYS_MS: "100,100,100,100,100,100",
      PROVIDER_FAILOVER_THRESHOLD: "2",
      PROVIDER_PROBE_INTERVAL_MS: "3000",
    },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const c = ctx.owner.client;
  await c.patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" } } });
  primary = (
    await c.post(`${ctx.ws}/providers/email`, {
      type: "emailapi1",
      name: "Primary",
      config: { apiKey: "k-primary", baseUrl: fake.url("/primary") },
    })
  ).body.id;
  secondary = (
    await c.post(`${ctx.ws}/providers/email`, {
      type: "emailapi1",
      name: "Secondary",
      priority: 1,
      config: { apiKey: "k-secondary", baseUrl: fake.url("/secondary") },
    })
  ).body.id;
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

async function send(email: string) {
  const contactId = await newContact(ctx.owner.client, ctx.ws, { email });
  const queued = await ctx.owner.client.post(`${ctx.ws}/messages`, {
    contactId,
    channel: "email",
    content: { subject: "Hi", html: "<p>Hi</p>" },
  });
  return waitFor(
    async () => {
      const m = (await ctx.owner.client.get(`${ctx.ws}/messages/${queued.body.id}`)).body;
      return m.status === "sent" ? m : undefined;
    },
    15_000,
    `message to ${email} sent`,
  );
}

const providers = async () =>
  new Map(
    ((await ctx.owner.client.get(`${ctx.ws}/providers/email`)).body as Array<{ id: string }>).map((p) => [
      p.id,
      p,
    ]),
  );
const audits = async (action: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/audit-logs?action=${action}`)).body.data as Array<{
    targetId: string;
  }>;

test("the default fails past the threshold, sends move to the next provider, and a probe brings it back", async () => {
  const first = await send("one@example.com");
  expect(first).toMatchObject({ providerId: secondary, providerType: "emailapi1" });
  expect(fake.received.filter((r) => r.path.startsWith("/primary"))).toHaveLength(2);
  // The batch reports its providers' health just after it records its sends.
  const failing = await waitFor(async () => {
    const p = (await providers()).get(primary) as { status?: string } | undefined;
    return p?.status === "failing" ? p : undefined;
  }, 5_000);
  expect(failing).toMatchObject({
    isDefault: true,
    status: "failing",
    consecutiveFailures: 2,
    failingSince: expect.any(String),
  });
  expect((await providers()).get(secondary)).toMatchObject({ status: "active" });
  expect(await audits("provider.failing")).toEqual([expect.objectContaining({ targetId: primary })]);

  // Until the probe is due, sends skip the failing provider.
  const during = await send("two@example.com");
  expect(during.providerId).toBe(secondary);
  expect(fake.received.filter((r) => r.path.startsWith("/primary"))).toHaveLength(2);

  primaryUp = true;
  await waitFor(
    async () => {
      const [row] = await (
        await database()
      ).query<{ due: boolean }>(`SELECT probe_at <= now() AS due FROM providers WHERE id = $1`, {
        bind: [primary],
        type: QueryTypes.SELECT,
      });
      return row.due;
    },
    10_000,
    "the primary's probe to come due",
  );
  const probed = await send("three@example.com");
  expect(probed.providerId).toBe(primary);
  const recovered = await waitFor(async () => {
    const p = (await providers()).get(primary) as { status?: string } | undefined;
    return p?.status === "active" ? p : undefined;
  }, 5_000);
  expect(recovered).toMatchObject({ status: "active", consecutiveFailures: 0, failingSince: null });
  expect(await audits("provider.recovered")).toEqual([expect.objectContaining({ targetId: primary })]);
});
