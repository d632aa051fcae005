import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Dynamic content through the gateway: slots upserted by name (201, then
 * 200), each variant's filter checked with its path, and templates drawing
 * the first matching variant (else the default) for the contact, in
 * previews and in sends.
 */

let app: TestApp;
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
      "content",
    ],
    env: { MESSAGE_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  await c().patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" } } });
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;
const plan = (value: string) => ({
  match: "all",
  conditions: [{ field: "attributes.plan", operator: "eq", value }],
});

test("slots upsert by name; filters are checked with their paths; the list finds them", async () => {
  const created = await c().post(`${ctx.ws}/dynamic-content`, {
    name: "Hero",
    slot: "hero",
    defaultContent: "<p>Try us</p>",
    variants: [{ filter: plan("pro"), content: "<p>Thanks, pro</p>" }],
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    slot: "hero",
    defaultContent: "<p>Try us</p>",
    variants: [{ content: "<p>Thanks, pro</p>" }],
  });
  const replaced = await c().post(`${ctx.ws}/dynamic-content`, {
    name: "Hero banner",
    slot: "hero",
    defaultContent: "<p>Try us today</p>",
    variants: [
      { filter: plan("pro"), content: "<p>Thanks, pro</p>" },
      { filter: plan("free"), content: "<p>Go pro</p>" },
    ],
  });
  expect(replaced.status).toBe(200);
  expect(replaced.body).toMatchObject({ id: created.body.id, name: "Hero banner" });

  const bad = await c().post(`${ctx.ws}/dynamic-content`, {
    name: "Bad",
    slot: "bad",
    variants: [
      {
        filter: { match: "all", conditions: [{ field: "shoeSize", operator: "eq", value: 1 }] },
        content: "x",
      },
    ],
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toMatch(/^variants\[0\]\.filter\.conditions\[0\]/);
  expect((await c().post(`${ctx.ws}/dynamic-content`, { name: "Bad", slot: "no spaces" })).status).toBe(400);

  const listed = (await c().get(`${ctx.ws}/dynamic-content?search=banner`)).body;
  expect(listed).toMatchObject({ data: [{ slot: "hero" }], pagination: { total: 1 } });
});

test("a template draws the first matching variant for the contact, else the default, in previews and sends", async () => {
  const template = await c().post(`${ctx.ws}/templates`, {
    name: "With hero",
    channel: "email",
    content: { subject: "News", html: '<div>{% dynamic "hero" %}</div><p>Bye</p>' },
  });
  expect(template.status).toBe(201);
  const contact = async (email: string, attributes: Record<string, unknown>) =>
    (await c().post(`${ctx.ws}/contacts`, { email, attributes })).body.id as string;
  const pro = await contact("pro@example.com", { plan: "pro" });
  const free = await contact("free@example.com", { plan: "free" });
  const other = await contact("other@example.com", {});

  const preview = async (contactId: string) =>
    (await c().post(`${ctx.ws}/templates/${template.body.id}/preview`, { contactId })).body.content
      .html as string;
  expect(await preview(pro)).toContain("<div><p>Thanks, pro</p></div>");
  expect(await preview(free)).toContain("<div><p>Go pro</p></div>");
  expect(await preview(other)).toContain("<div><p>Try us today</p></div>");

  const sent: Record<string, string> = {};
  for (const [who, id] of Object.entries({ pro, free, other })) {
    const res = await c().post(`${ctx.ws}/messages`, {
      contactId: id,
      channel: "email",
      templateId: template.body.id,
    });
    expect(res.status).toBe(202);
    const message = await waitFor(async () => {
      const m = (await c().get(`${ctx.ws}/messages/${res.body.id}`)).body;
      return m.status === "sent" ? m : undefined;
    }, 10_000);
    sent[who] = message.content.html;
  }
  expect(sent.pro).toContain("Thanks, pro");
  expect(sent.free).toContain("Go pro");
  expect(sent.other).toContain("Try us today");
});
