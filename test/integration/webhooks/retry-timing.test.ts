import crypto from "node:crypto";
import { publishDomainEvent } from "../../helpers/facts";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/** The one real-time check of the production schedule: retries 2 s and 8 s after failures. */
let app: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "webhooks"],
    env: { WEBHOOK_RETRY_DELAYS_MS: undefined, WEBHOOK_TIMEOUT_MS: undefined },
  });
  receiver = await startReceiver((_req, index) =>
    index < 2 ? { status: 500, body: "not yet" } : { status: 200, body: "ok" },
  );
});
afterAll(async () => {
  await receiver.close();
  await app.stop();
});

test("fails twice, then succeeds: attempts 1, 2, 3 with the same delivery id about 2 s and 8 s apart", async () => {
  const ctx = await ownerWithWorkspace(app.baseUrl);
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, {
    url: receiver.url(),
    events: ["contact.updated"],
  });
  expect(created.status).toBe(201);
  await publishDomainEvent(app.broker, ctx.workspaceId, "contact.updated", {
    contactId: "c9",
    email: "x@example.test",
    firstName: null,
    lastName: null,
  });

  await waitFor(() => receiver.received.length === 3, 14_000, "three attempts");
  const [a, b, c] = receiver.received;
  expect([a, b, c].map((r) => r.headers["x-webhook-attempt"])).toEqual(["1", "2", "3"]);
  expect(new Set([a, b, c].map((r) => r.headers["x-webhook-delivery"])).size).toBe(1);
  expect(b.at - a.at).toBeGreaterThanOrEqual(1950);
  expect(b.at - a.at).toBeLessThan(3200);
  expect(c.at - b.at).toBeGreaterThanOrEqual(7950);
  expect(c.at - b.at).toBeLessThan(9200);
  for (const r of [a, b, c]) {
    const ts = r.headers["x-webhook-timestamp"] as string;
    expect(r.headers["x-webhook-signature"]).toBe(
      crypto.createHmac("sha256", created.body.secret).update(`${ts}.${r.body}`).digest("hex"),
    );
  }
  const list = await waitFor(
    async () => {
      const res = await ctx.owner.client.get(`${ctx.ws}/webhooks/deliveries`);
      return res.body.data[0]?.success ? res.body.data : null;
    },
    3000,
    "success recorded",
  );
  expect(list[0]).toMatchObject({
    id: a.headers["x-webhook-delivery"],
    attempt: 3,
    success: true,
    statusCode: 200,
  });
}, 25_000);
