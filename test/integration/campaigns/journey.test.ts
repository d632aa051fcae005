import { database } from "../../../lib/database";
import { MACHINE_OPEN_MS } from "../../../services/messages/tracking";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { startReceiver } from "../../helpers/receiver";

/**
 * One journey end to end through the gateway: an event enrolls by a
 * trigger before its answer, the first mail goes through the `log`
 * provider, the wait ends when the clock is moved on, the condition sees
 * the open (a real hit on the tracking pixel), the second mail follows;
 * `campaign.contact.enrolled` and each `message.sent` reach the webhook
 * endpoint once.
 */

let app: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: [
      "api",
      "auth",
      "workspaces",
      "contacts",
      "events",
      "segments",
      "templates",
      "messages",
      "campaigns",
      "webhooks",
    ],
    env: { MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50", WEBHOOK_POLL_MS: "100" },
  });
  receiver = await startReceiver();
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await receiver?.close();
});

test("event → trigger → enrollment → send → wait → condition on the open → second send, each fact delivered once", async () => {
  const c = ctx.owner.client;
  await c.patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" } } });
  const hook = await c.post(`${ctx.ws}/webhooks`, {
    name: "journey",
    url: receiver.url("/facts"),
    events: ["campaign.contact.enrolled", "message.sent"],
  });
  expect(hook.status).toBe(201);
  const templateId = (
    await c.post(`${ctx.ws}/templates`, {
      name: "Journey mail",
      channel: "email",
      content: { subject: "Hello {{ contact.firstName }}", html: "<p>Hello {{ contact.firstName }}</p>" },
    })
  ).body.id;
  const campaign = await c.post(`${ctx.ws}/campaigns`, {
    name: "Journey",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "first", type: "send", config: { channel: "email", templateId } },
        { id: "later", type: "wait", config: { duration: "PT1H" } },
        { id: "opened", type: "condition", config: { messageOpened: { nodeId: "first" } } },
        { id: "second", type: "send", config: { channel: "email", templateId } },
        { id: "quiet", type: "exit", config: {} },
      ],
      edges: [
        { from: "entry", to: "first" },
        { from: "first", to: "later" },
        { from: "later", to: "opened" },
        { from: "opened", to: "second", branch: "yes" },
        { from: "opened", to: "quiet", branch: "no" },
      ],
    },
  });
  const id = campaign.body.id;
  await c.post(`${ctx.ws}/campaigns/${id}/triggers`, { type: "event", config: { eventType: "signup" } });
  await c.post(`${ctx.ws}/campaigns/${id}/execute`);
  const who = (await c.post(`${ctx.ws}/contacts`, { email: "journey@example.com", firstName: "Jo" })).body.id;

  expect((await c.post(`${ctx.ws}/events`, { type: "signup", contactId: who })).status).toBe(201);
  const [enrollment] = (await c.get(`${ctx.ws}/contacts/automation?contactId=${who}`)).body.data;
  expect(enrollment).toMatchObject({ campaignId: id, contactId: who });

  // The first mail is sent and the enrollment waits an hour.
  const first = await waitFor(async () => {
    const [m] = (await c.get(`${ctx.ws}/messages?campaignId=${id}`)).body.data;
    const [e] = (await c.get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
    return m?.status === "sent" && e.status === "waiting" ? m : undefined;
  }, 10_000);
  // The contact opens it in Gmail (later than a second after the send, which counts as a machine's): Gmail's
  // image proxy fetches the pixel as the reader opens the mail, so the journey must see it opened.
  const detail = (await c.get(`${ctx.ws}/messages/${first.id}`)).body;
  await waitFor(() => Date.now() - Date.parse(detail.sentAt) > MACHINE_OPEN_MS, 5000, "a person's open time");
  const pixel = /src="[^"]*(\/api\/messages\/[^"]+\/track\?[^"]+)"/.exec(String(detail.content.html))![1];
  const open = await fetch(`${app.baseUrl}${pixel.replaceAll("&amp;", "&")}`, {
    headers: {
      "user-agent":
        "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)",
    },
  });
  expect(open.status).toBe(200);
  await waitFor(
    async () => ((await c.get(`${ctx.ws}/messages/${first.id}`)).body.openedAt ? true : undefined),
    5_000,
  );

  // The clock moves on an hour: the wait is due.
  await (
    await database()
  ).query(`UPDATE campaign_enrollments SET run_at = now(), waiting_until = now() WHERE id = $1`, {
    bind: [enrollment.id],
  });
  const done = await waitFor(async () => {
    const [e] = (await c.get(`${ctx.ws}/campaigns/${id}/enrollments`)).body.data;
    return e.status === "completed" ? e : undefined;
  }, 10_000);
  expect(done.currentNodeId).toBe("second");
  const logs = (await c.get(`${ctx.ws}/campaigns/${id}/logs`)).body.data;
  expect(logs.find((l: { nodeId: string }) => l.nodeId === "opened")).toMatchObject({ branch: "yes" });
  const messages = await waitFor(async () => {
    const all = (await c.get(`${ctx.ws}/messages?campaignId=${id}`)).body.data;
    return all.length === 2 &&
      all.every((m: { status: string }) => m.status !== "queued" && m.status !== "sending")
      ? all
      : undefined;
  }, 10_000);

  // Each fact reaches the endpoint once.
  const facts = await waitFor(async () => {
    const got = receiver.received
      .filter((r) => r.path === "/facts")
      .map((r) => JSON.parse(r.body) as { event: string; data: Record<string, unknown> });
    return got.filter((f) => f.event === "message.sent").length >= 2 ? got : undefined;
  }, 15_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const all = receiver.received.filter((r) => r.path === "/facts").map((r) => JSON.parse(r.body));
  expect(all).toHaveLength(facts.length);
  const enrolled = all.filter((f) => f.event === "campaign.contact.enrolled");
  expect(enrolled).toHaveLength(1);
  expect(enrolled[0].data).toEqual({ campaignId: id, contactId: who });
  const sent = all.filter((f) => f.event === "message.sent");
  expect(sent.map((f) => f.data.messageId).sort()).toEqual(messages.map((m: { id: string }) => m.id).sort());
  expect(sent.every((f) => f.data.campaignId === id && f.data.contactId === who)).toBe(true);
});
