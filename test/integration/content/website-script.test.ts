import { gzipSync } from "node:zlib";
import fs from "node:fs";
import path from "node:path";
import { queryAcrossWorkspaces } from "../../../lib/database";
import { PUBLIC_DIR } from "../../../lib/paths";
import { open } from "../../../lib/secret-box";
import { landingPageToken } from "../../../services/content/script-origin";
import { startApp, type TestApp } from "../../helpers/app";
import { waitFor } from "../../helpers/wait";
import { HttpClient, ownerWithWorkspace } from "../../helpers/http";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * The website script's endpoints through the gateway: the site key and the
 * allowed origins, the config with its ETag (segment-limited items only for
 * a visitor in the segment), anonymous events that become the contact's
 * when a form identifies the visitor, and prefill for known visitors only.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let key: string;
const SITE = "https://www.acme.test";

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content", "push"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const workspace = await c().patch(ctx.ws, { settings: { allowedOrigins: [SITE] } });
  key = workspace.body.siteKey;
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;
const page = () => new HttpClient(app.baseUrl);
const from = { headers: { origin: SITE } };

test("workspaces carry a read-only siteKey; unknown keys are 401, other origins 403", async () => {
  expect(key).toMatch(/^pk_[A-Za-z0-9]{24}$/);
  await c().patch(ctx.ws, { siteKey: "pk_mine" });
  expect((await c().get(ctx.ws)).body.siteKey).toBe(key);
  expect((await page().get(`/api/script/config?key=pk_nope`, from)).status).toBe(401);
  expect((await page().get(`/api/script/config`, from)).status).toBe(401);
  expect(
    (await page().get(`/api/script/config?key=${key}`, { headers: { origin: "https://evil.example" } }))
      .status,
  ).toBe(403);
  const ok = await page().get(`/api/script/config?key=${key}`, from);
  expect(ok.status).toBe(200);
  expect(ok.headers.get("access-control-allow-origin")).toBe(SITE);
});

test("a site's allowedOrigins, kept by each node a few seconds, apply to the script within them", async () => {
  const other = "https://shop.acme.test";
  const fromOther = { headers: { origin: other } };
  expect((await page().get(`/api/script/config?key=${key}`, fromOther)).status).toBe(403);
  await c().patch(ctx.ws, { settings: { allowedOrigins: [SITE, other] } });
  const allowed = await waitFor(
    async () => {
      const res = await page().get(`/api/script/config?key=${key}`, fromOther);
      return res.status === 200 ? res : undefined;
    },
    10_000,
    "the new origin allowed",
  );
  expect(allowed.headers.get("access-control-allow-origin")).toBe(other);
  await c().patch(ctx.ws, { settings: { allowedOrigins: [SITE] } });
  await waitFor(
    async () => (await page().get(`/api/script/config?key=${key}`, fromOther)).status === 403 || undefined,
    10_000,
    "the origin refused again",
  );
});

test("config: active focus items and forms with an ETag; segment-limited items for members only", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Newsletter",
    fields: [
      { key: "email", label: "Email", type: "email", required: true, mapTo: "email" },
      { key: "first", label: "First name", type: "text", mapTo: "firstName" },
    ],
  });
  const vips = await c().post(`${ctx.ws}/segments`, { name: "VIPs", type: "static" });
  await c().post(`${ctx.ws}/focus-items`, {
    name: "Everyone",
    type: "bar",
    content: "<p>Hello</p>",
    formId: form.body.id,
    trigger: { on: "delay", value: 1 },
    rules: { urls: ["/pricing"], frequency: { maxViews: 2, perDays: 1 } },
  });
  await c().post(`${ctx.ws}/focus-items`, {
    name: "VIP only",
    type: "modal",
    content: "<p>Hi VIP</p>",
    trigger: { on: "load" },
    rules: { segmentId: vips.body.id },
  });
  await c().post(`${ctx.ws}/focus-items`, {
    name: "Off",
    type: "bar",
    content: "x",
    trigger: { on: "load" },
    active: false,
  });

  const anonymous = await page().get(`/api/script/config?key=${key}`, from);
  expect(anonymous.body).toEqual({
    focusItems: [
      {
        id: expect.any(String),
        name: "Everyone",
        type: "bar",
        content: "<p>Hello</p>",
        formId: form.body.id,
        trigger: { on: "delay", value: 1 },
        rules: { urls: ["/pricing"], frequency: { maxViews: 2, perDays: 1 } },
      },
    ],
    forms: [
      {
        id: form.body.id,
        name: "Newsletter",
        embedUrl: expect.stringMatching(`/api/forms/${form.body.id}/embed$`),
      },
    ],
    vapidPublicKey: null,
  });
  const etag = anonymous.headers.get("etag")!;
  const again = await page().get(`/api/script/config?key=${key}`, {
    headers: { origin: SITE, "if-none-match": etag },
  });
  expect(again.status).toBe(304);

  // The answer is kept between reads, and a change to the workspace's forms or focus items shows in the next one.
  await c().put(`${ctx.ws}/forms/${form.body.id}`, { ...form.body, active: false });
  const formless = await page().get(`/api/script/config?key=${key}`, from);
  expect(formless.body.forms).toEqual([]);
  expect(formless.headers.get("etag")).not.toBe(etag);
  await c().put(`${ctx.ws}/forms/${form.body.id}`, { ...form.body, active: true });
  expect((await page().get(`/api/script/config?key=${key}`, from)).headers.get("etag")).toBe(etag);

  // A visitor identified by a submission, then put in the segment, sees the VIP item.
  const submitted = await page().post(`/api/forms/${form.body.id}/submit`, {
    email: "vip@example.com",
    first: "Vi",
  });
  const token = submitted.body.visitorToken;
  await c().post(`${ctx.ws}/segments/${vips.body.id}/members`, { contactIds: [submitted.body.contactId] });
  const known = await page().get(`/api/script/config?key=${key}&visitorToken=${token}`, from);
  expect(known.body.focusItems.map((i: { name: string }) => i.name)).toEqual(["Everyone", "VIP only"]);
  expect(known.headers.get("etag")).not.toBe(etag);
  expect((await page().get(`/api/script/config?key=${key}&visitorToken=forged`, from)).status).toBe(400);

  // Prefill: the known fields of the form, for that visitor only.
  const prefill = await page().get(
    `/api/script/prefill?key=${key}&formId=${form.body.id}&visitorToken=${token}`,
    from,
  );
  expect(prefill.body).toEqual({ fields: { email: "vip@example.com", first: "Vi" } });
  expect((await page().get(`/api/script/prefill?key=${key}&formId=${form.body.id}`, from)).body).toEqual({
    fields: {},
  });
});

test("events: anonymous by session, the contact's once identified (earlier ones too); reserved types refused", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Identify",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
  });
  const visit = (body: Record<string, string>) =>
    page().request("POST", `/api/script/event?key=${key}`, {
      form: body,
      headers: { origin: SITE, accept: "application/json" },
    });
  const first = await visit({
    type: "page_view",
    sessionId: "s-1",
    pageUrl: `${SITE}/pricing?utm_source=ad`,
    utmSource: "ad",
    metadata: JSON.stringify({ title: "Pricing" }),
  });
  expect(first.status).toBe(200);
  expect(first.body).toEqual({ eventId: expect.any(String) });
  expect((await visit({ type: "message.open", sessionId: "s-1" })).status).toBe(403);
  const item = await c().post(`${ctx.ws}/focus-items`, {
    name: "Counted",
    type: "bar",
    content: "x",
    trigger: { on: "load" },
  });
  for (const type of ["focus_item.view", "focus_item.view", "focus_item.conversion"])
    expect(
      (await visit({ type, sessionId: "s-1", metadata: JSON.stringify({ focusItemId: item.body.id }) }))
        .status,
    ).toBe(200);
  expect((await c().get(`${ctx.ws}/focus-items/${item.body.id}`)).body).toMatchObject({
    views: 2,
    conversions: 1,
  });
  expect((await visit({ type: "page_view", metadata: "[1]" })).status).toBe(400);

  const submitted = await page().post(`/api/forms/${form.body.id}/submit`, {
    email: "seen@example.com",
    sessionId: "s-1",
  });
  const contactId = submitted.body.contactId;
  const later = await visit({
    type: "pricing_viewed",
    sessionId: "s-2",
    visitorToken: submitted.body.visitorToken,
  });
  expect(later.status).toBe(200);
  const events = (await c().get(`${ctx.ws}/events?contactId=${contactId}`)).body as Array<
    Record<string, any>
  >;
  expect(events.map((e) => e.type).sort()).toEqual([
    "focus_item.conversion",
    "focus_item.view",
    "focus_item.view",
    "form.submitted",
    "page_view",
    "pricing_viewed",
  ]);
  expect(events.find((e) => e.type === "page_view")).toMatchObject({
    metadata: { title: "Pricing" },
    utmSource: "ad",
    sessionId: "s-1",
  });
});

test("the script is served from public/ and stays under 10 KB gzipped", async () => {
  const served = await page().get("/cms.js");
  expect(served.status).toBe(200);
  expect(served.headers.get("content-type")).toMatch(/javascript/);
  expect(gzipSync(fs.readFileSync(path.join(PUBLIC_DIR, "cms.js"))).length).toBeLessThan(10 * 1024);
});

test("push: a browser's subscription stored (201), the same endpoint updated (200) with the visitor's contact; keys never answered", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Push identify",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
  });
  const subscription = {
    endpoint: "https://push.example.com/send/abc123",
    expirationTime: null,
    keys: {
      p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
      auth: "tBHItJI5svbpez7KI4CCXg",
    },
  };
  const first = await page().post(`/api/script/push?key=${key}`, { subscription }, from);
  expect(first.status).toBe(201);
  expect(first.body).toEqual({
    id: expect.any(String),
    contactId: null,
    type: "web",
    endpoint: subscription.endpoint,
    token: null,
    active: true,
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  const who = await page().post(`/api/forms/${form.body.id}/submit`, { email: "push@example.com" });
  const again = await page().post(
    `/api/script/push?key=${key}`,
    { subscription, visitorToken: who.body.visitorToken },
    from,
  );
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ id: first.body.id, contactId: who.body.contactId });
  const [stored] = await queryAcrossWorkspaces<{ keys: string }>(
    `SELECT keys FROM push_subscriptions WHERE id = $1`,
    [first.body.id],
  );
  expect(stored.keys).not.toContain(subscription.keys.auth);
  expect(JSON.parse(open(stored.keys))).toEqual(subscription.keys);
  const bad = await page().post(
    `/api/script/push?key=${key}`,
    { subscription: { ...subscription, endpoint: "http://push.example.com/x" } },
    from,
  );
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("subscription.endpoint");
  // Form-encoded, as the script sends it (no CORS preflight): the subscription as JSON text.
  const encoded = await page().request("POST", `/api/script/push?key=${key}`, {
    ...from,
    form: { subscription: JSON.stringify(subscription) },
  });
  expect([encoded.status, encoded.body.id]).toEqual([200, first.body.id]);
  const badForm = await page().request("POST", `/api/script/push?key=${key}`, {
    ...from,
    form: { subscription: JSON.stringify({ ...subscription, endpoint: "http://push.example.com/x" }) },
  });
  expect([badForm.status, badForm.body.details[0].field]).toEqual([400, "subscription.endpoint"]);
  const notJson = await page().request("POST", `/api/script/push?key=${key}`, {
    ...from,
    form: { subscription: "{not json" },
  });
  expect([notJson.status, notJson.body.details[0].field]).toEqual([400, "subscription"]);
});

test("push renewal: the new subscription naming the old one with its auth secret keeps its contact and retires it; a wrong secret does neither", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Push renewal",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
  });
  const who = await page().post(`/api/forms/${form.body.id}/submit`, { email: "renew@example.com" });
  const keys = (auth: string) => ({
    p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
    auth,
  });
  const old = { endpoint: "https://push.example.com/send/old-1", keys: keys("oldAuthSecret0123456789") };
  const first = await page().post(
    `/api/script/push?key=${key}`,
    { subscription: old, visitorToken: who.body.visitorToken },
    from,
  );
  expect(first.body.contactId).toBe(who.body.contactId);
  const renew = (endpoint: string, previousAuth: string) =>
    page().request("POST", `/api/script/push?key=${key}`, {
      ...from,
      // As the worker posts it: form-encoded, no visitor token (a worker has no page storage).
      form: {
        subscription: JSON.stringify({ endpoint, keys: keys("newAuthSecret0123456789") }),
        previousEndpoint: old.endpoint,
        previousAuth,
      },
    });
  const subscriptions = async () =>
    (await c().get(`${ctx.ws}/push?limit=100`)).body.data.filter((s: { endpoint: string }) =>
      s.endpoint.includes("/send/"),
    );

  const forged = await renew("https://push.example.com/send/forged-1", "notTheSecret0123456789");
  expect([forged.status, forged.body.contactId]).toEqual([201, null]);
  expect((await subscriptions()).find((s: { id: string }) => s.id === first.body.id).active).toBe(true);

  const renewed = await renew("https://push.example.com/send/new-1", old.keys.auth);
  expect([renewed.status, renewed.body.contactId, renewed.body.active]).toEqual([
    201,
    who.body.contactId,
    true,
  ]);
  expect((await subscriptions()).find((s: { id: string }) => s.id === first.body.id).active).toBe(false);

  const half = await page().request("POST", `/api/script/push?key=${key}`, {
    ...from,
    form: { subscription: JSON.stringify(old), previousEndpoint: old.endpoint },
  });
  expect([half.status, half.body.details[0].field]).toEqual([400, "previousAuth"]);
});

test("Origin null (a sandboxed page) is answered only for the workspace's own landing pages", async () => {
  const slug = (await c().get(ctx.ws)).body.slug;
  await c().post(`${ctx.ws}/landing-pages`, {
    name: "Guide",
    slug: "guide",
    title: "Guide",
    status: "published",
    html: "<h1>Guide</h1>",
  });
  const served = await page().get(`/p/${slug}/guide`);
  const token = /<meta name="cms-page" content="([^"]+)">/.exec(served.text)![1];
  const sandboxed = (pageToken?: string) =>
    [
      `/api/script/config?key=${key}${pageToken ? `&page=${encodeURIComponent(pageToken)}` : ""}`,
      { headers: { origin: "null" } },
    ] as const;
  const ok = await page().get(...sandboxed(token));
  expect(ok.status).toBe(200);
  expect(ok.headers.get("access-control-allow-origin")).toBe("null");
  // Any site's sandboxed frame says `null` too: without our landing page's token it proves nothing.
  for (const pageToken of [undefined, "forged", landingPageToken(asWorkspaceId("another-workspace"), "lp")])
    expect((await page().get(...sandboxed(pageToken))).status).toBe(403);
});

test("refused origins (script and forms) are shown in the workspace's GET, most recent first, with counts", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Refusals",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
  });
  const stranger = "https://stranger.example";
  for (let i = 0; i < 3; i++)
    expect(
      (await page().get(`/api/script/config?key=${key}`, { headers: { origin: stranger } })).status,
    ).toBe(403);
  const posted = await page().post(
    `/api/forms/${form.body.id}/submit`,
    { email: "x@example.test" },
    { headers: { origin: "https://copycat.example" } },
  );
  expect(posted.status).toBe(403);
  const seen = await waitFor(
    async () => {
      const refused = (await c().get(ctx.ws)).body.refusedOrigins as Array<Record<string, unknown>>;
      return refused.some((r) => r.origin === "https://copycat.example") &&
        refused.some((r) => r.origin === stranger)
        ? refused
        : undefined;
    },
    15_000,
    "the refusals in the workspace",
  );
  expect(seen.find((r) => r.origin === stranger)).toEqual({
    origin: stranger,
    count: 3,
    lastAt: expect.stringMatching(/Z$/),
  });
  expect(seen.length).toBeLessThanOrEqual(10);
  const times = seen.map((r) => String(r.lastAt));
  expect(times).toEqual([...times].sort().reverse());
});
