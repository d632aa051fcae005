import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, ownerWithWorkspace } from "../../helpers/http";

/**
 * The security headers of the service's own pages (and every other answer):
 * a script policy without inline script, no framing, no MIME sniffing. The
 * landing pages are the workspace's HTML and keep their own sandbox.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let formId: string;
let landingPage: string;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content", "messages"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const c = ctx.owner.client;
  formId = (
    await c.post(`${ctx.ws}/forms`, {
      name: "Leads",
      fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
    })
  ).body.id;
  const slug = (await c.get(ctx.ws)).body.slug;
  await c.post(`${ctx.ws}/landing-pages`, {
    name: "Guide",
    slug: "guide",
    title: "Guide",
    status: "published",
    html: `<h1>Guide</h1><div data-cms-form="${formId}"></div>`,
  });
  landingPage = `/p/${slug}/guide`;
});

afterAll(async () => {
  await app?.stop();
});

const html = { headers: { accept: "text/html" } };
const pages = () => [
  "/auth/signin",
  "/",
  "/api/docs",
  `/f/${formId}`,
  "/auth/reset-password",
  "/api/auth/signout",
  "/api/unsubscribe?token=not-a-token",
  "/api/preferences?token=not-a-token",
  "/favicon.ico",
];

async function answers(): Promise<Array<[string, Headers]>> {
  const visitor = new HttpClient(app.baseUrl);
  return Promise.all(
    pages().map(async (path) => [path, (await visitor.get(path, html)).headers] as [string, Headers]),
  );
}

test("pages allow scripts only from the service's own files, no inline script", async () => {
  for (const [path, headers] of await answers()) {
    const csp = headers.get("content-security-policy") ?? "";
    expect([path, csp]).toEqual([path, expect.stringContaining("script-src 'self';")]);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline/);
  }
});

test("pages cannot be framed (frame-ancestors and X-Frame-Options)", async () => {
  for (const [path, headers] of await answers()) {
    expect([path, headers.get("content-security-policy")]).toEqual([
      path,
      expect.stringContaining("frame-ancestors 'none'"),
    ]);
    expect([path, headers.get("x-frame-options")]).toEqual([path, "DENY"]);
  }
});

test("answers are not MIME-sniffed, and API answers carry the headers too", async () => {
  for (const [path, headers] of await answers())
    expect([path, headers.get("x-content-type-options")]).toEqual([path, "nosniff"]);
  const api = await ctx.owner.client.get(ctx.ws);
  expect(api.headers.get("x-content-type-options")).toBe("nosniff");
  expect(api.headers.get("x-frame-options")).toBe("DENY");
  const missing = await new HttpClient(app.baseUrl).get("/api/nothing-here");
  expect(missing.status).toBe(404);
  expect(missing.headers.get("x-content-type-options")).toBe("nosniff");
});

test("the favicon is served", async () => {
  const icon = await new HttpClient(app.baseUrl).get("/favicon.ico");
  expect(icon.status).toBe(200);
  expect(icon.headers.get("content-type")).toMatch(/icon/);
});

test("scripts other sites load stay loadable: no Cross-Origin-Resource-Policy", async () => {
  const visitor = new HttpClient(app.baseUrl);
  for (const path of ["/cms.js", "/form.css", `/api/forms/${formId}/embed`]) {
    const res = await visitor.get(path);
    expect([path, res.status]).toEqual([path, 200]);
    expect(res.headers.get("cross-origin-resource-policy")).toBeNull();
  }
});

test("a landing page keeps its sandbox, without the app pages' frame rules", async () => {
  const res = await new HttpClient(app.baseUrl).get(landingPage, html);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-security-policy")).toMatch(/^sandbox allow-forms allow-scripts/);
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("x-frame-options")).toBeNull();
});
