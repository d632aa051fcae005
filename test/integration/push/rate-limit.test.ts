import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { browser, startPushService, type FakePushService } from "../../helpers/push-service";
import { waitFor } from "../../helpers/wait";

/**
 * Web push sends keep the provider type's rate limit (PROVIDER_RATE_LIMITS,
 * here `vapid=2` a second) as every channel's sends do: six push messages to
 * six browsers are all sent, spread over at least three one-second windows.
 */

const PER_SECOND = 2;
const MESSAGES = 6;

let app: TestApp;
let service: FakePushService;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  service = await startPushService();
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "templates", "messages", "providers", "push"],
    env: {
      MESSAGE_POLL_MS: "50",
      PUSH_CA_FILE: service.caFile,
      PROVIDER_RATE_LIMITS: `vapid=${PER_SECOND}`,
    },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await service?.stop();
});

test("push sends wait for their provider type's turn: every message sent, no more than the limit a second", async () => {
  const c = ctx.owner.client;
  const generated = await c.post(`${ctx.ws}/providers/push/generate`, { subject: "mailto:ops@acme.test" });
  expect(generated.status).toBe(201);
  const ids: string[] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const contactId = (await c.post(`${ctx.ws}/contacts`, { email: `rate${i}@push.example.com` })).body.id;
    const b = browser(service, `rate-${i}`);
    expect((await c.post(`${ctx.ws}/push`, { type: "web", contactId, ...b.subscription })).status).toBe(201);
    ids.push(contactId);
  }
  // Queued together, so without the limit they would all go out at once.
  const messageIds = await Promise.all(
    ids.map(async (contactId) => {
      const sent = await c.post(`${ctx.ws}/messages`, {
        contactId,
        channel: "push",
        content: { title: "Limited", body: "One at a time" },
      });
      expect(sent.status).toBe(202);
      return sent.body.id as string;
    }),
  );
  for (const id of messageIds)
    await waitFor(
      async () => ((await c.get(`${ctx.ws}/messages/${id}`)).body.status === "sent" ? true : undefined),
      20_000,
      `message ${id} sent`,
    );

  const times = service.requests
    .filter((r) => r.path.startsWith("/push/rate-"))
    .map((r) => r.at)
    .sort((a, b) => a - b);
  expect(times).toHaveLength(MESSAGES);
  // Fixed one-second windows of PER_SECOND sends each: the last of six takes its turn at least two windows after
  // the first. Arrivals are measured, not turns: the first send also opens the connection, hence the slack.
  expect(times[MESSAGES - 1] - times[0]).toBeGreaterThanOrEqual((MESSAGES / PER_SECOND - 1) * 1000 - 500);
});
