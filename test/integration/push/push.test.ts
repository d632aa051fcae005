import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { browser, startPushService, verifyVapid, type FakePushService } from "../../helpers/push-service";
import { waitFor } from "../../helpers/wait";

/**
 * Web push through the gateway: the VAPID pair generated, subscriptions
 * managed, and push messages (direct, broadcast, journey send node) sent to
 * a local push service through the real vapid client: each subscription's
 * outcome kept, a gone one deactivated, a transient failure retried, the
 * url a tracked click link; push/test; the script's `vapidPublicKey`.
 */

let app: TestApp;
let service: FakePushService;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let publicKey: string;
const c = () => ctx.owner.client;

beforeAll(async () => {
  service = await startPushService();
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
      "providers",
      "push",
      "campaigns",
      "jobs",
      "content",
    ],
    env: {
      MESSAGE_POLL_MS: "50",
      CAMPAIGN_POLL_MS: "50",
      MESSAGE_RETRY_DELAYS_MS: "100,100",
      PUSH_CA_FILE: service.caFile,
    },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  await service?.stop();
});

const contact = async (firstName: string) =>
  (await c().post(`${ctx.ws}/contacts`, { email: `${firstName.toLowerCase()}@push.example.com`, firstName }))
    .body.id as string;

/** A browser of the contact, subscribed through the API. */
async function subscribed(contactId: string, name: string) {
  const b = browser(service, name);
  const res = await c().post(`${ctx.ws}/push`, { type: "web", contactId, ...b.subscription });
  expect(res.status).toBe(201);
  return { ...b, id: res.body.id as string };
}

const requestsTo = (name: string) => service.requests.filter((r) => r.path === `/push/${name}`);

async function settled(messageId: string, statuses = ["sent", "failed", "suppressed"]) {
  return waitFor(
    async () => {
      const m = (await c().get(`${ctx.ws}/messages/${messageId}`)).body;
      return statuses.includes(m.status) ? m : null;
    },
    10_000,
    `message ${messageId} settled`,
  );
}

test("push/generate: a subject is needed once; a new pair each time, the private key masked; the script gets the public key", async () => {
  const siteKey = (await c().get(ctx.ws)).body.siteKey as string;
  const config = async () => (await app.http().get(`/api/script/config?key=${siteKey}`)).body.vapidPublicKey;
  expect(await config()).toBeNull();

  const noSubject = await c().post(`${ctx.ws}/providers/push/generate`, {});
  expect([noSubject.status, noSubject.body.details?.[0]?.field]).toEqual([400, "subject"]);
  const bad = await c().post(`${ctx.ws}/providers/push/generate`, { subject: "ops@acme.test" });
  expect([bad.status, bad.body.details?.[0]?.field]).toEqual([400, "subject"]);

  const created = await c().post(`${ctx.ws}/providers/push/generate`, { subject: "mailto:ops@acme.test" });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    channel: "push",
    type: "vapid",
    config: { subject: "mailto:ops@acme.test", privateKey: expect.stringMatching(/^••••.{4}$/) },
  });
  expect(Buffer.from(created.body.config.publicKey, "base64url")).toHaveLength(65);
  await waitFor(async () => (await config()) === created.body.config.publicKey, 5_000, "the first key");

  const replaced = await c().post(`${ctx.ws}/providers/push/generate`, {});
  expect(replaced.status).toBe(200);
  expect(replaced.body).toMatchObject({ id: created.body.id, config: { subject: "mailto:ops@acme.test" } });
  expect(replaced.body.config.publicKey).not.toBe(created.body.config.publicKey);
  publicKey = replaced.body.config.publicKey;
  await waitFor(async () => (await config()) === publicKey, 5_000, "the new key");
});

test("subscriptions: created (201) or updated by endpoint or token (200), listed, changed, removed; keys never answered", async () => {
  const who = await contact("Sub");
  const b = browser(service, "routes");
  const first = await c().post(`${ctx.ws}/push`, { type: "web", contactId: who, ...b.subscription });
  expect(first.status).toBe(201);
  expect(first.body).toEqual({
    id: expect.any(String),
    contactId: who,
    type: "web",
    endpoint: b.subscription.endpoint,
    token: null,
    active: true,
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  const again = await c().post(`${ctx.ws}/push`, { type: "web", ...b.subscription });
  expect([again.status, again.body.id, again.body.contactId]).toEqual([200, first.body.id, who]);
  const device = await c().post(`${ctx.ws}/push`, {
    type: "pushgw1",
    contactId: who,
    token: "device-token-1",
  });
  expect(device.status).toBe(201);
  expect((await c().post(`${ctx.ws}/push`, { type: "pushgw1", token: "device-token-1" })).status).toBe(200);

  const refused: Array<[Record<string, unknown>, number, string]> = [
    [{ type: "web", endpoint: b.subscription.endpoint }, 400, "keys"],
    [{ type: "web", keys: b.subscription.keys }, 400, "endpoint"],
    [{ type: "pushgw2" }, 400, "token"],
    [{ type: "pushgw1", token: "t", endpoint: b.subscription.endpoint }, 400, "endpoint"],
    [{ type: "web", ...b.subscription, endpoint: "http://push.example.com/x" }, 400, "endpoint"],
    [{ type: "pushgw1", token: "t2", contactId: "nobody" }, 404, "contactId"],
  ];
  for (const [body, status, field] of refused) {
    const res = await c().post(`${ctx.ws}/push`, body);
    expect([res.status, res.body.details?.[0]?.field]).toEqual([status, field]);
  }

  const list = await c().get(`${ctx.ws}/push?contactId=${who}`);
  expect(list.body.pagination.total).toBe(2);
  expect(JSON.stringify(list.body)).not.toContain(b.subscription.keys.auth);
  expect((await c().get(`${ctx.ws}/push?contactId=${who}&type=web`)).body.data.map((s: any) => s.id)).toEqual(
    [first.body.id],
  );
  const off = await c().patch(`${ctx.ws}/push/${first.body.id}`, { active: false });
  expect(off.body).toMatchObject({ id: first.body.id, active: false });
  expect((await c().get(`${ctx.ws}/push?contactId=${who}&active=false`)).body.data).toHaveLength(1);
  expect((await c().patch(`${ctx.ws}/push/${first.body.id}`, { contactId: "nobody" })).status).toBe(404);
  expect((await c().patch(`${ctx.ws}/push/${first.body.id}`, { contactId: null })).body.contactId).toBeNull();
  expect((await c().get(`${ctx.ws}/push/${device.body.id}`)).body.token).toBe("device-token-1");
  expect((await c().delete(`${ctx.ws}/push/${device.body.id}`)).body).toEqual({ success: true });
  expect((await c().get(`${ctx.ws}/push/${device.body.id}`)).status).toBe(404);
  expect((await c().delete(`${ctx.ws}/push/${device.body.id}`)).status).toBe(404);

  const narrow = await c().post(`${ctx.ws}/keys`, { name: "reader", scopes: ["contacts.read"] });
  const reader = app.http();
  reader.bearer = narrow.body.key;
  expect((await reader.get(`${ctx.ws}/push`)).status).toBe(200);
  expect((await reader.post(`${ctx.ws}/push`, { type: "pushgw1", token: "x" })).status).toBe(403);
  expect((await reader.post(`${ctx.ws}/push/test`, { contactId: who, title: "t", body: "b" })).status).toBe(
    403,
  );
});

test("a push message goes to each active subscription: one accepts, a gone one is deactivated, one without its provider skipped", async () => {
  const ada = await contact("Ada");
  const laptop = await subscribed(ada, "ada-laptop");
  const old = await subscribed(ada, "ada-old");
  service.answers.set("/push/ada-old", 410);
  const phone = await c().post(`${ctx.ws}/push`, { type: "pushgw2", contactId: ada, token: "ada-phone" });

  const sent = await c().post(`${ctx.ws}/messages`, {
    contactId: ada,
    channel: "push",
    content: {
      title: "Hi {{ contact.firstName }}",
      body: "Half price today",
      url: "https://shop.example.com/sale",
    },
  });
  expect(sent.status).toBe(202);
  const message = await settled(sent.body.id);
  expect(message).toMatchObject({ status: "sent", providerType: "vapid" });
  expect(message.deliveries.map((d: any) => [d.subscriptionId, d.status, d.code]).sort()).toEqual(
    [
      [laptop.id, "accepted", null],
      [old.id, "gone", "410"],
      [phone.body.id, "skipped", "not_configured"],
    ].sort(),
  );

  const [request] = requestsTo("ada-laptop");
  const payload = laptop.read(request);
  expect(payload).toMatchObject({ messageId: sent.body.id, title: "Hi Ada", body: "Half price today" });
  expect((await verifyVapid(request, publicKey, service.origin)).sub).toBe("mailto:ops@acme.test");
  // The url opens through the click redirect.
  const tracked = new URL(String(payload.url));
  expect(tracked.pathname).toBe(`/api/messages/${sent.body.id}/track`);
  const click = await app.http().get(`${tracked.pathname}${tracked.search}`);
  expect([click.status, click.headers.get("location")]).toEqual([302, "https://shop.example.com/sale"]);

  expect((await c().get(`${ctx.ws}/push/${old.id}`)).body.active).toBe(false);
  expect((await c().get(`${ctx.ws}/push/${laptop.id}`)).body.active).toBe(true);
});

test("no active subscription: suppressed invalid_address; no contact: 400", async () => {
  const bo = await contact("Bo");
  const res = await c().post(`${ctx.ws}/messages`, {
    contactId: bo,
    channel: "push",
    content: { title: "t", body: "b" },
  });
  expect(await settled(res.body.id)).toMatchObject({ status: "suppressed", reason: "invalid_address" });
  const none = await c().post(`${ctx.ws}/messages`, {
    to: "someone",
    channel: "push",
    content: { title: "t", body: "b" },
  });
  expect([none.status, none.body.details?.[0]?.field]).toEqual([400, "contactId"]);
});

test("refused by every push service: failed naming the codes; a push service down: retried, then sent", async () => {
  const cy = await contact("Cy");
  await subscribed(cy, "cy-1");
  service.answers.set("/push/cy-1", 400);
  const refused = await c().post(`${ctx.ws}/messages`, {
    contactId: cy,
    channel: "push",
    content: { title: "t", body: "b" },
  });
  const failed = await settled(refused.body.id);
  expect(failed.status).toBe("failed");
  expect(failed.error).toContain("web 400");

  const dee = await contact("Dee");
  await subscribed(dee, "dee-1");
  service.answers.set("/push/dee-1", 503);
  const res = await c().post(`${ctx.ws}/messages`, {
    contactId: dee,
    channel: "push",
    content: { title: "t", body: "b" },
  });
  await waitFor(
    async () => (await c().get(`${ctx.ws}/messages/${res.body.id}`)).body.error?.includes("web 503"),
    10_000,
    "the retry",
  );
  service.answers.delete("/push/dee-1");
  const message = await settled(res.body.id);
  expect(message.status).toBe("sent");
  expect(message.deliveries.map((d: any) => [d.attempt, d.status, d.code])).toEqual([
    [1, "failed", "503"],
    [2, "accepted", null],
  ]);
});

test("push/test: one subscription or a contact's, each result as send-test answers", async () => {
  const eve = await contact("Eve");
  const one = await subscribed(eve, "eve-1");
  const two = await subscribed(eve, "eve-2");
  service.answers.set("/push/eve-2", 410);
  const byId = await c().post(`${ctx.ws}/push/test`, {
    subscriptionId: one.id,
    title: "Test",
    body: "It works",
  });
  expect(byId.body).toEqual({ results: [{ to: one.id, status: "sent", error: null }] });
  expect(one.read(requestsTo("eve-1").at(-1)!)).toMatchObject({ title: "Test", body: "It works" });

  const byContact = await c().post(`${ctx.ws}/push/test`, { contactId: eve, title: "Test", body: "Both" });
  expect(byContact.status).toBe(200);
  expect(byContact.body.results.map((r: any) => [r.to, r.status, r.error]).sort()).toEqual(
    [
      [one.id, "sent", null],
      [two.id, "failed", "gone: 410"],
    ].sort(),
  );
  expect((await c().get(`${ctx.ws}/push/${two.id}`)).body.active).toBe(false);

  const neither = await c().post(`${ctx.ws}/push/test`, { title: "t", body: "b" });
  expect([neither.status, neither.body.details?.[0]?.field]).toEqual([400, "subscriptionId"]);
  const missing = await c().post(`${ctx.ws}/push/test`, { subscriptionId: "nobody", title: "t", body: "b" });
  expect(missing.status).toBe(404);
  const lonely = await c().post(`${ctx.ws}/push/test`, {
    contactId: await contact("Lone"),
    title: "t",
    body: "b",
  });
  expect([lonely.status, lonely.body.details?.[0]?.field]).toEqual([400, "contactId"]);
});

test("a push template goes out from a broadcast and from a journey's send node", async () => {
  const fay = await contact("Fay");
  const fb = await subscribed(fay, "fay-1");
  const templateId = (
    await c().post(`${ctx.ws}/templates`, {
      name: "Push news",
      channel: "push",
      content: { title: "News for {{ contact.firstName }}", body: "Only for {{ contact.email }}" },
    })
  ).body.id;

  const broadcast = await c().post(`${ctx.ws}/campaigns/broadcast`, {
    name: "Push broadcast",
    channel: "push",
    templateId,
    contactIds: [fay],
  });
  expect(broadcast.status).toBe(202);
  expect((await finishedJob(c(), ctx.ws, broadcast.body.jobId)).result).toMatchObject({ queued: 1 });
  const [viaBroadcast] = (await c().get(`${ctx.ws}/messages?campaignId=${broadcast.body.campaignId}`)).body
    .data;
  expect((await settled(viaBroadcast.id)).status).toBe("sent");
  expect(fb.read(requestsTo("fay-1").at(-1)!)).toMatchObject({
    title: "News for Fay",
    body: "Only for fay@push.example.com",
  });

  const journey = await c().post(`${ctx.ws}/campaigns`, {
    name: "Push journey",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "send", type: "send", config: { channel: "push", templateId } },
      ],
      edges: [{ from: "entry", to: "send" }],
    },
  });
  expect(journey.status).toBe(201);
  await c().post(`${ctx.ws}/campaigns/${journey.body.id}/execute`);
  expect((await c().post(`${ctx.ws}/campaigns/${journey.body.id}/enroll`, { contactId: fay })).status).toBe(
    201,
  );
  const viaJourney = await waitFor(
    async () => (await c().get(`${ctx.ws}/messages?campaignId=${journey.body.id}`)).body.data[0],
    10_000,
    "the journey's message",
  );
  expect((await settled(viaJourney.id)).status).toBe("sent");
  expect(requestsTo("fay-1")).toHaveLength(2);
  expect(fb.read(requestsTo("fay-1").at(-1)!)).toMatchObject({
    messageId: viaJourney.id,
    title: "News for Fay",
  });
});

test("the worker is served for sites to host; with click tracking off a push's url is left as written", async () => {
  const worker = await app.http().get("/cms-push-worker.js");
  expect(worker.status).toBe(200);
  expect(worker.headers.get("content-type")).toContain("javascript");
  expect(worker.text).toContain("notificationclick");

  await c().patch(ctx.ws, { settings: { tracking: { clicks: false } } });
  const gil = await contact("Gil");
  const gb = await subscribed(gil, "gil-1");
  const res = await c().post(`${ctx.ws}/messages`, {
    contactId: gil,
    channel: "push",
    content: { title: "t", body: "b", url: "https://shop.example.com/plain" },
  });
  expect((await settled(res.body.id)).status).toBe("sent");
  expect(gb.read(requestsTo("gil-1")[0]).url).toBe("https://shop.example.com/plain");
});
