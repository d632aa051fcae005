import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { publishDomainEvent } from "../../helpers/facts";
import { seal } from "../../../lib/secret-box";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/** NODE_ENV=production: private targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true. */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "webhooks"],
    env: {
      NODE_ENV: "production",
      AUTH_SECRET: "test-secret-for-production-guard-0123456789",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: undefined,
      WEBHOOK_RETRY_DELAYS_MS: "50,50",
      WEBHOOK_POLL_MS: "200",
    },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test.each([
  "http://127.0.0.1:8080/hook",
  "http://localhost/hook",
  "http://169.254.169.254/latest",
  "http://10.0.0.7/",
  "http://[::1]/x",
  "http://[::127.0.0.1]/x",
  "http://[64:ff9b::7f00:1]/x",
  "http://[2002:a9fe:a9fe::]/x",
  "http://[::ffff:0:a9fe:a9fe]/x",
  "http://192.0.2.1/x",
])("create refuses %s with 400", async (url) => {
  const res = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url });
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({
    code: "VALIDATION_ERROR",
    details: [{ field: "url", message: expect.stringMatching(/private/) }],
  });
});

test("update refuses a private target too; a public address is accepted", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/webhooks`, { url: "https://93.184.216.34/hook" });
  expect(created.status).toBe(201);
  expect(
    (await ctx.owner.client.patch(`${ctx.ws}/webhooks/${created.body.id}`, { url: "http://192.168.1.1/" }))
      .status,
  ).toBe(400);
});

test("checked again at send: a private target stored earlier gets no request, the attempts fail", async () => {
  const receiver = await startReceiver();
  try {
    const sequelize = await database();
    await sequelize.query(
      `INSERT INTO webhook_endpoints (id, workspace_id, url, direction, secret_sealed) VALUES ('legacy', :ws, :url, 'OUTBOUND', :sealed)`,
      { replacements: { ws: ctx.workspaceId, url: receiver.url(), sealed: seal("whsec_legacy") } },
    );
    await publishDomainEvent(app.broker, ctx.workspaceId, "contact.deleted", {
      contactId: "c1",
      email: "x@example.test",
    });
    const row = await waitFor(
      async () => {
        const [r] = await sequelize.query<{
          attempt: number;
          error: string;
          success: boolean;
          next_attempt_at: Date | null;
        }>(
          `SELECT attempt, error, success, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = 'legacy'`,
          { type: QueryTypes.SELECT },
        );
        return r?.attempt === 3 && r.next_attempt_at === null ? r : null;
      },
      5000,
      "three refused attempts",
    );
    expect(row).toMatchObject({ success: false, error: expect.stringMatching(/private/) });
    expect(receiver.received).toEqual([]);
  } finally {
    await receiver.close();
  }
});
