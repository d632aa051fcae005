import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace } from "../../helpers/http";

/**
 * Landing pages through the gateway: CRUD with a slug unique per workspace
 * (409), drafts not served, a published page served sandboxed at
 * /p/{workspaceSlug}/{slug} with its forms drawn, each visit counted and
 * recorded as `page_view`.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let workspaceSlug: string;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  workspaceSlug = (await c().get(ctx.ws)).body.slug;
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;
const visitor = () => new HttpClient(app.baseUrl);

test("CRUD: slugs unique per workspace (409), search and status filters, PUT replaces, publishing stamps publishedAt", async () => {
  const body = { name: "Spring sale", slug: "spring-sale", title: "Spring sale", html: "<h1>Sale</h1>" };
  const created = await c().post(`${ctx.ws}/landing-pages`, body);
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    ...body,
    status: "draft",
    publishedAt: null,
    views: 0,
    url: expect.stringMatching(new RegExp(`/p/${workspaceSlug}/spring-sale$`)),
  });
  expect((await c().post(`${ctx.ws}/landing-pages`, { ...body, name: "Again" })).status).toBe(409);
  const badSlug = await c().post(`${ctx.ws}/landing-pages`, { ...body, slug: "Spring Sale!" });
  expect(badSlug.status).toBe(400);
  expect(badSlug.body.details[0].field).toBe("slug");
  const other = await c().post(`${ctx.ws}/landing-pages`, { ...body, name: "Winter", slug: "winter" });

  expect(
    (await c().get(`${ctx.ws}/landing-pages?search=spring`)).body.data.map((p: { id: string }) => p.id),
  ).toEqual([created.body.id]);
  const published = await c().put(`${ctx.ws}/landing-pages/${other.body.id}`, {
    name: "Winter",
    slug: "winter",
    title: "Winter",
    html: "<p>Cold</p>",
    status: "published",
  });
  expect(published.body).toMatchObject({
    status: "published",
    publishedAt: expect.any(String),
    html: "<p>Cold</p>",
  });
  const again = await c().put(`${ctx.ws}/landing-pages/${other.body.id}`, {
    ...published.body,
    title: "Winter!",
  });
  expect(again.body.publishedAt).toBe(published.body.publishedAt);
  expect((await c().get(`${ctx.ws}/landing-pages?status=published`)).body.data).toHaveLength(1);
  const clash = await c().put(`${ctx.ws}/landing-pages/${other.body.id}`, { ...body, status: "draft" });
  expect(clash.status).toBe(409);

  const stranger = await ownerWithWorkspace(app.baseUrl);
  expect((await stranger.owner.client.get(`${stranger.ws}/landing-pages/${created.body.id}`)).status).toBe(
    404,
  );
  expect((await stranger.owner.client.post(`${stranger.ws}/landing-pages`, body)).status).toBe(201);

  expect((await c().delete(`${ctx.ws}/landing-pages/${created.body.id}`)).body).toEqual({ success: true });
  expect((await c().get(`${ctx.ws}/landing-pages/${created.body.id}`)).status).toBe(404);
});

test("a published page is served sandboxed with its forms, counted and recorded as page_view; a draft is 404", async () => {
  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Leads",
    fields: [{ key: "email", label: "Work email", type: "email", required: true, mapTo: "email" }],
  });
  const page = await c().post(`${ctx.ws}/landing-pages`, {
    name: "Launch",
    slug: "launch",
    title: "Launch <day>",
    html: `<h1>We launch</h1><div data-cms-form="${form.body.id}"></div><div data-cms-form="unknown"></div>`,
  });
  const address = `/p/${workspaceSlug}/launch`;
  expect((await visitor().get(address)).status).toBe(404);
  await c().put(`${ctx.ws}/landing-pages/${page.body.id}`, { ...page.body, status: "published" });

  const served = await visitor().get(address, { headers: { referer: "https://search.example/?q=launch" } });
  expect(served.status).toBe(200);
  expect(served.headers.get("content-type")).toMatch(/text\/html/);
  expect(served.headers.get("content-security-policy")).toMatch(/^sandbox /);
  expect(served.headers.get("content-security-policy")).not.toMatch(/allow-same-origin/);
  expect(served.text).toContain("<title>Launch &lt;day&gt;</title>");
  expect(served.text).toContain(`action="/api/forms/${form.body.id}/submit"`);
  expect(served.text).toContain("Work email");
  expect(served.text).not.toContain("data-cms-form");
  expect(served.text).toContain('<script src="/form.js" data-enhance></script>');
  await visitor().get(address);
  // A HEAD (a link checker, a preview) is no visit: the same headers, nothing counted.
  const head = await fetch(`${app.baseUrl}${address}`, { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(head.headers.get("content-security-policy")).toMatch(/^sandbox /);

  expect((await c().get(`${ctx.ws}/landing-pages/${page.body.id}`)).body.views).toBe(2);
  const views = (await c().get(`${ctx.ws}/events?type=page_view`)).body;
  expect(views).toHaveLength(2);
  expect(views.map((e: Record<string, any>) => e.metadata)).toEqual([
    { landingPageId: page.body.id, title: "Launch <day>" },
    { landingPageId: page.body.id, title: "Launch <day>" },
  ]);
  expect(views.map((e: Record<string, any>) => e.referrer)).toEqual(
    expect.arrayContaining([null, "https://search.example/?q=launch"]),
  );

  // A form posted from the sandboxed page (its origin is `null`) is taken.
  const posted = await visitor().post(
    `/api/forms/${form.body.id}/submit`,
    { email: "lead@example.com" },
    { headers: { origin: "null" } },
  );
  expect(posted.status).toBe(201);
  expect((await visitor().get(`/p/${workspaceSlug}/nothing-here`)).status).toBe(404);
  expect((await visitor().get(`/p/no-such-workspace/launch`)).status).toBe(404);
});
