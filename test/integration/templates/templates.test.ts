import http from "node:http";
import type { AddressInfo } from "node:net";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** `{ws}/templates` and its sub-routes: CRUD, TEMPLATE_ERROR, MJML, translations, A/B, previews, send-test, translate. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let translator: http.Server;
let translatorUrl: string;
const translateRequests: Array<Record<string, unknown>> = [];

const email = (extra: Record<string, unknown> = {}) => ({
  name: "Welcome",
  channel: "email",
  content: { subject: "Hi {{ contact.firstName }}", html: "<p>Hello {{ contact.firstName }}</p>", ...extra },
});

beforeAll(async () => {
  // A LibreTranslate-compatible fake: upper-cases every text it is given.
  translator = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const parsed = JSON.parse(body) as { q: string[] };
      translateRequests.push(parsed);
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          translatedText: parsed.q.map((q) =>
            q.replace(/(^|>)([^<]+)/g, (_, edge: string, t: string) => edge + t.toUpperCase()),
          ),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => translator.listen(0, "127.0.0.1", resolve));
  translatorUrl = `http://127.0.0.1:${(translator.address() as AddressInfo).port}`;
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts", "templates", "messages"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  translator?.close();
});

test("create, get, list with filters, update (content merges), delete", async () => {
  const c = ctx.owner.client;
  const created = await c.post(`${ctx.ws}/templates`, { ...email(), tags: ["onboarding"] });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: "Welcome",
    channel: "email",
    locale: "en",
    tags: ["onboarding"],
    translations: [],
  });
  const sms = await c.post(`${ctx.ws}/templates`, {
    name: "Code",
    channel: "sms",
    content: { body: "Your code {{ code }}" },
  });
  expect(sms.status).toBe(201);

  expect((await c.get(`${ctx.ws}/templates?channel=sms`)).body.data.map((t: { id: string }) => t.id)).toEqual(
    [sms.body.id],
  );
  expect((await c.get(`${ctx.ws}/templates?tag=onboarding`)).body.data).toHaveLength(1);
  expect((await c.get(`${ctx.ws}/templates?search=welc`)).body.pagination.total).toBe(1);

  const updated = await c.patch(`${ctx.ws}/templates/${created.body.id}`, {
    content: { subject: "New subject" },
  });
  expect(updated.status).toBe(200);
  expect(updated.body.content).toMatchObject({
    subject: "New subject",
    html: "<p>Hello {{ contact.firstName }}</p>",
  });

  expect((await c.delete(`${ctx.ws}/templates/${sms.body.id}`)).status).toBe(200);
  expect((await c.get(`${ctx.ws}/templates/${sms.body.id}`)).status).toBe(404);
});

test("saves refuse bad Liquid with the field and line, and content that does not fit the channel", async () => {
  const c = ctx.owner.client;
  const bad = await c.post(
    `${ctx.ws}/templates`,
    email({ html: "<p>ok</p>\n<p>{{ contact.firstName | nosuchfilter }}</p>" }),
  );
  expect(bad.status).toBe(400);
  expect(bad.body.code).toBe("TEMPLATE_ERROR");
  expect(bad.body.details[0]).toMatchObject({ field: "content.html", line: 2 });
  expect(bad.body.details[0].message).toMatch(/nosuchfilter/);

  const shape = await c.post(`${ctx.ws}/templates`, {
    name: "x",
    channel: "sms",
    content: { text: "no body" },
  });
  expect(shape.status).toBe(400);
  expect(shape.body.code).toBe("VALIDATION_ERROR");
  expect(shape.body.details.map((d: { field: string }) => d.field)).toContain("content.body");
});

test("MJML is compiled at save and its faults name the line", async () => {
  const c = ctx.owner.client;
  const ok = await c.post(
    `${ctx.ws}/templates`,
    email({
      html: undefined,
      mjml: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ contact.firstName }}</mj-text></mj-column></mj-section></mj-body></mjml>",
    }),
  );
  expect(ok.status).toBe(201);
  expect(ok.body.content.html).toMatch(/<!doctype html>/i);
  expect(ok.body.content.html).toContain("Hi {{ contact.firstName }}");
  const bad = await c.post(
    `${ctx.ws}/templates`,
    email({ html: undefined, mjml: "<mjml><mj-body>\n<mj-nope></mj-nope></mj-body></mjml>" }),
  );
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({
    code: "TEMPLATE_ERROR",
    details: [expect.objectContaining({ field: "content.mjml", line: 2 })],
  });
});

test("preview renders for a contact, a sample, a locale and a variant; unsaved content too", async () => {
  const c = ctx.owner.client;
  const contact = await c.post(`${ctx.ws}/contacts`, {
    email: "ana@example.com",
    firstName: "Ana",
    locale: "de-AT",
  });
  const t = await c.post(
    `${ctx.ws}/templates`,
    email({ html: "<style>p{color:red}</style><p>Hello {{ contact.firstName }} {{ missing.thing }}</p>" }),
  );
  expect(
    (
      await c.post(`${ctx.ws}/templates/${t.body.id}/translations`, {
        locale: "de",
        content: { subject: "Hallo {{ contact.firstName }}" },
      })
    ).status,
  ).toBe(201);

  const forContact = await c.post(`${ctx.ws}/templates/${t.body.id}/preview`, { contactId: contact.body.id });
  expect(forContact.status).toBe(200);
  expect(forContact.body).toMatchObject({ channel: "email", locale: "de", variant: null });
  expect(forContact.body.content.subject).toBe("Hallo Ana");
  expect(forContact.body.content.html).toContain('<p style="color: red;">Hello Ana </p>');
  expect(forContact.body.content.text).toBe("Hello Ana");

  const sample = await c.post(`${ctx.ws}/templates/${t.body.id}/preview`, {});
  expect(sample.body.content.subject).toBe("Hi Alex");
  const english = await c.post(`${ctx.ws}/templates/${t.body.id}/preview`, {
    contactId: contact.body.id,
    locale: "en",
  });
  expect(english.body.content.subject).toBe("Hi Ana");

  const unsaved = await c.post(`${ctx.ws}/templates/preview`, {
    channel: "sms",
    content: { body: "Code {{ code }}" },
    variables: { code: "42" },
  });
  expect(unsaved.body).toMatchObject({ channel: "sms", content: { body: "Code 42" } });
  const unsavedBad = await c.post(`${ctx.ws}/templates/preview`, {
    channel: "sms",
    content: { body: "{% if %}" },
  });
  expect(unsavedBad.body.code).toBe("TEMPLATE_ERROR");
});

test("translations: 201, 409 when present, PATCH merges, GET and DELETE by locale", async () => {
  const c = ctx.owner.client;
  const t = await c.post(`${ctx.ws}/templates`, email());
  const base = `${ctx.ws}/templates/${t.body.id}/translations`;
  expect((await c.post(base, { locale: "fr", content: { subject: "Salut" } })).status).toBe(201);
  expect((await c.post(base, { locale: "fr", content: { subject: "Salut" } })).status).toBe(409);
  const patched = await c.patch(`${base}/fr`, { content: { preheader: "Bonjour" } });
  expect(patched.body.content).toEqual({ subject: "Salut", preheader: "Bonjour" });
  expect((await c.get(base)).body.map((x: { locale: string }) => x.locale)).toEqual(["fr"]);
  expect((await c.get(`${ctx.ws}/templates/${t.body.id}`)).body.translations).toEqual(["fr"]);
  expect((await c.post(base, { locale: "it", content: { nope: 1 } })).status).toBe(400);
  expect((await c.delete(`${base}/fr`)).status).toBe(200);
  expect((await c.get(`${base}/fr`)).status).toBe(404);
});

test("A/B: weights must sum to 100 with ids A.., previews by variant, a winner is fixed", async () => {
  const c = ctx.owner.client;
  const t = await c.post(`${ctx.ws}/templates`, email());
  const ab = `${ctx.ws}/templates/${t.body.id}/ab`;
  expect(
    (
      await c.put(ab, {
        variants: [
          { id: "A", weight: 50 },
          { id: "B", weight: 40 },
        ],
      })
    ).status,
  ).toBe(400);
  expect(
    (
      await c.put(ab, {
        variants: [
          { id: "A", weight: 50 },
          { id: "C", weight: 50 },
        ],
      })
    ).status,
  ).toBe(400);
  const set = await c.put(ab, {
    variants: [
      { id: "A", weight: 50 },
      { id: "B", weight: 50, content: { subject: "Variant B" } },
    ],
    metric: "click",
  });
  expect(set.status).toBe(200);
  expect(set.body).toMatchObject({
    metric: "click",
    winner: null,
    stats: [
      { id: "A", sent: 0, rate: 0 },
      { id: "B", sent: 0 },
    ],
  });
  const b = await c.post(`${ctx.ws}/templates/${t.body.id}/preview`, { variant: "B" });
  expect(b.body).toMatchObject({ variant: "B", content: { subject: "Variant B" } });
  expect((await c.post(`${ab}/winner`, { variant: "B" })).body.winner).toBe("B");
  expect((await c.post(`${ab}/winner`, { variant: "D" })).status).toBe(400);
  expect((await c.put(ab, { variants: [] })).body.variants).toEqual([]);
});

test("send-test goes through the provider with a [TEST] subject and records nothing", async () => {
  const c = ctx.owner.client;
  const t = await c.post(`${ctx.ws}/templates`, email());
  const res = await c.post(`${ctx.ws}/templates/${t.body.id}/send-test`, {
    to: ["a@example.com", "b@example.com"],
  });
  expect(res.status).toBe(200);
  expect(res.body.results).toEqual([
    { to: "a@example.com", status: "sent", error: null },
    { to: "b@example.com", status: "sent", error: null },
  ]);
  expect((await c.get(`${ctx.ws}/messages`)).body.pagination.total).toBe(0);
  expect(
    (await c.post(`${ctx.ws}/templates/${t.body.id}/send-test`, { to: ["1", "2", "3", "4", "5", "6"] }))
      .status,
  ).toBe(400);
});

test("translate: 400 naming settings.translation when unset; through the configured API, Liquid kept", async () => {
  const c = ctx.owner.client;
  const t = await c.post(`${ctx.ws}/templates`, email());
  const unset = await c.post(`${ctx.ws}/templates/${t.body.id}/translate`, { targetLocales: ["de"] });
  expect(unset.status).toBe(400);
  expect(unset.body.details[0].field).toBe("settings.translation");

  // The API key is sealed at rest and masked in reads; the translator receives the real one.
  const saved = await c.patch(ctx.ws, {
    settings: { translation: { baseUrl: translatorUrl, apiKey: "lt-secret-key-1234" } },
  });
  expect(saved.body.settings.translation).toEqual({ baseUrl: translatorUrl, apiKey: "••••1234" });
  const done = await c.post(`${ctx.ws}/templates/${t.body.id}/translate`, { targetLocales: ["de", "en"] });
  expect(done.status).toBe(200);
  expect(done.body.translations).toHaveLength(1);
  expect(done.body.translations[0]).toMatchObject({
    locale: "de",
    content: { subject: "HI {{ contact.firstName }}", html: "<p>HELLO {{ contact.firstName }}</p>" },
  });
  expect(translateRequests.at(-1)).toMatchObject({
    source: "en",
    target: "de",
    format: "html",
    api_key: "lt-secret-key-1234",
  });
  expect(JSON.stringify(translateRequests.at(-1))).not.toContain("contact.firstName");
});

test("unknown ids are 404", async () => {
  const c = ctx.owner.client;
  expect((await c.get(`${ctx.ws}/templates/nope`)).status).toBe(404);
  expect((await c.post(`${ctx.ws}/templates/nope/preview`, {})).status).toBe(404);
  expect((await c.get(`${ctx.ws}/templates/nope/ab`)).status).toBe(404);
});
