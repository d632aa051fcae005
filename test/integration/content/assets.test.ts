import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, multipartBody, ownerWithWorkspace, signUp, type HttpResponse } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Assets through the gateway, kept on local disk under DATA_DIR: categories
 * (names unique per workspace), multipart uploads typed by their bytes with
 * a 25 MiB limit, remote assets, filters and sorting, downloads streamed
 * with safe headers and counted, gated assets opened by a form's signed
 * link (recording `asset.downloaded` for the contact), deletes that remove
 * the file.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "assets-test-"));

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "events", "segments", "forms", "content"],
    env: { DATA_DIR: dataDir },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});

afterAll(async () => {
  await app?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const c = () => ctx.owner.client;
const visitor = () => new HttpClient(app.baseUrl);

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");

/** A multipart body as a browser sends it, through the test client (so answers are checked against OpenAPI). */
async function upload(
  client: HttpClient,
  ws: string,
  file: { bytes: Buffer; name: string; type: string } | null,
  fields: Record<string, string> = {},
): Promise<HttpResponse> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  if (file) form.append("file", new Blob([file.bytes], { type: file.type }), file.name);
  return client.request("POST", `${ws}/assets`, await multipartBody(form));
}

test("categories: a bare array by name with asset counts; names unique per workspace in any case (409); deleting one keeps its assets", async () => {
  const guides = await c().post(`${ctx.ws}/assets/categories`, { name: "Guides" });
  expect(guides.status).toBe(201);
  expect(guides.body).toMatchObject({ name: "Guides", assets: 0 });
  expect((await c().post(`${ctx.ws}/assets/categories`, { name: "guides" })).status).toBe(409);
  expect((await c().post(`${ctx.ws}/assets/categories`, { name: " " })).status).toBe(400);
  const brand = await c().post(`${ctx.ws}/assets/categories`, { name: "Brand" });
  const logo = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "logo.png", type: "image/png" },
    {
      categoryId: brand.body.id,
    },
  );
  expect(logo.status).toBe(201);
  const list = await c().get(`${ctx.ws}/assets/categories`);
  expect(list.body.map((k: { name: string; assets: number }) => [k.name, k.assets])).toEqual([
    ["Brand", 1],
    ["Guides", 0],
  ]);

  const stranger = await ownerWithWorkspace(app.baseUrl);
  expect(
    (await stranger.owner.client.post(`${stranger.ws}/assets/categories`, { name: "Guides" })).status,
  ).toBe(201);
  const foreign = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "x.png", type: "image/png" },
    {
      categoryId: (await stranger.owner.client.get(`${stranger.ws}/assets/categories`)).body[0].id,
    },
  );
  expect(foreign.status).toBe(400);
  expect(foreign.body.details[0].field).toBe("categoryId");

  expect((await c().delete(`${ctx.ws}/assets/categories/${brand.body.id}`)).body).toEqual({ success: true });
  expect((await c().get(`${ctx.ws}/assets/${logo.body.id}`)).body.categoryId).toBeNull();
  expect((await c().delete(`${ctx.ws}/assets/categories/${brand.body.id}`)).status).toBe(404);
});

test("an upload is typed by its bytes, not by what it declares; the file lands under DATA_DIR and downloads byte for byte with safe headers, counted", async () => {
  const png = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "../../photo.html", type: "text/html" },
    {
      name: "Team photo",
    },
  );
  expect(png.status).toBe(201);
  expect(png.body).toMatchObject({
    name: "Team photo",
    fileName: "photo.html",
    contentType: "image/png",
    size: PNG.length,
    remoteUrl: null,
    gated: false,
    downloads: 0,
    downloadUrl: expect.stringMatching(new RegExp(`/api/assets/${png.body.id}/download$`)),
  });
  const onDisk = path.join(dataDir, "assets", ctx.workspaceId, png.body.id);
  expect(fs.readFileSync(onDisk)).toEqual(PNG);
  expect(fs.readdirSync(path.join(dataDir, "assets", ".incoming"))).toEqual([]);

  const res = await fetch(`${app.baseUrl}/api/assets/${png.body.id}/download`);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer())).toEqual(PNG);
  expect(res.headers.get("content-type")).toBe("image/png");
  expect(res.headers.get("content-length")).toBe(String(PNG.length));
  expect(res.headers.get("content-disposition")).toBe(
    `inline; filename="photo.html"; filename*=UTF-8''photo.html`,
  );
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");

  const script = "<script>document.cookie</script>";
  const html = await upload(c(), ctx.ws, { bytes: Buffer.from(script), name: "evil.png", type: "image/png" });
  expect(html.body).toMatchObject({ name: "evil.png", contentType: "text/plain; charset=utf-8" });
  const page = await fetch(`${app.baseUrl}/api/assets/${html.body.id}/download`);
  expect(await page.text()).toBe(script);
  expect(page.headers.get("content-type")).toBe("text/plain; charset=utf-8");
  expect(page.headers.get("content-disposition")).toMatch(/^attachment; filename="evil.png"/);
  expect(page.headers.get("content-security-policy")).toContain("sandbox");

  // A HEAD says what a download would be, and is none.
  const head = await fetch(`${app.baseUrl}/api/assets/${png.body.id}/download`, { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(head.headers.get("content-type")).toBe("image/png");
  expect(head.headers.get("content-length")).toBe(String(PNG.length));
  expect((await c().get(`${ctx.ws}/assets/${png.body.id}`)).body.downloads).toBe(1);
  expect((await fetch(`${app.baseUrl}/api/assets/nope/download`)).status).toBe(404);
});

test("a Range is answered with its part (206); only a part that starts the file counts; past the end is 416", async () => {
  const bytes = Buffer.from("%PDF-1.4\n" + "0123456789".repeat(100));
  const pdf = await upload(c(), ctx.ws, { bytes, name: "long.pdf", type: "application/pdf" });
  const url = `${app.baseUrl}/api/assets/${pdf.body.id}/download`;

  const middle = await fetch(url, { headers: { range: "bytes=100-199" } });
  expect(middle.status).toBe(206);
  expect(middle.headers.get("content-range")).toBe(`bytes 100-199/${bytes.length}`);
  expect(middle.headers.get("content-length")).toBe("100");
  expect(Buffer.from(await middle.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
  expect((await c().get(`${ctx.ws}/assets/${pdf.body.id}`)).body.downloads).toBe(0);

  const first = await fetch(url, { headers: { range: "bytes=0-9" } });
  expect(first.status).toBe(206);
  expect(await first.text()).toBe("%PDF-1.4\n0");
  const whole = await fetch(url, { headers: { range: "bytes=0-0,5-6" } });
  expect(whole.status).toBe(200);
  expect(whole.headers.get("accept-ranges")).toBe("bytes");
  expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);
  expect((await c().get(`${ctx.ws}/assets/${pdf.body.id}`)).body.downloads).toBe(2);

  const past = await visitor().get(`/api/assets/${pdf.body.id}/download`, {
    headers: { range: `bytes=${bytes.length}-` },
  });
  expect(past.status).toBe(416);
  expect(past.body.code).toBe("RANGE_NOT_SATISFIABLE");
  expect(past.headers.get("content-range")).toBe(`bytes */${bytes.length}`);
});

test("bad uploads are clear 4xx and leave nothing behind: over 25 MiB is 413, no file or a wrong type 400 naming file, a bad field 400 naming it", async () => {
  const big = await upload(c(), ctx.ws, {
    bytes: Buffer.alloc(25 * 1024 * 1024 + 1, 7),
    name: "big.bin",
    type: "",
  });
  expect(big.status).toBe(413);
  expect(big.body.code).toBe("PAYLOAD_TOO_LARGE");
  const none = await upload(c(), ctx.ws, null, { name: "nothing" });
  expect(none.status).toBe(400);
  expect(none.body.details[0].field).toBe("file");
  const plain = await c().request("POST", `${ctx.ws}/assets`, {
    raw: "hello",
    headers: { "content-type": "text/plain" },
  });
  expect(plain.status).toBe(400);
  expect(plain.body.details[0].field).toBe("file");
  const broken = await c().request("POST", `${ctx.ws}/assets`, {
    raw: '--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
    headers: { "content-type": "multipart/form-data; boundary=x" },
  });
  expect(broken.status).toBe(400);
  const longName = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "a.png", type: "image/png" },
    {
      name: "x".repeat(70_000),
    },
  );
  expect(longName.status).toBe(400);
  expect(longName.body.details[0].field).toBe("name");
  const badField = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "a.png", type: "image/png" },
    { gated: "maybe" },
  );
  expect(badField.status).toBe(400);
  expect(badField.body.details[0].field).toBe("gated");
  // Hostile input is a 4xx naming the field: NUL bytes in either body, numbers past any page, ids past any id.
  const nulJson = await c().post(`${ctx.ws}/assets`, {
    name: "a\u0000b",
    remoteUrl: "https://example.com/x",
  });
  expect(nulJson.status).toBe(400);
  expect(nulJson.body.details[0].field).toBe("name");
  const nulField = await upload(
    c(),
    ctx.ws,
    { bytes: PNG, name: "a.png", type: "image/png" },
    { name: "a\u0000b" },
  );
  expect(nulField.status).toBe(400);
  expect(nulField.body.details[0].field).toBe("name");
  expect((await c().get(`${ctx.ws}/assets?page=1e400`)).status).toBe(400);
  expect((await visitor().get(`/api/assets/${"x".repeat(5000)}/download`)).status).toBe(400);
  expect(fs.readdirSync(path.join(dataDir, "assets", ".incoming"))).toEqual([]);
  const names = (await c().get(`${ctx.ws}/assets?limit=100`)).body.data.map((a: { name: string }) => a.name);
  expect(names).not.toContain("nothing");
  expect(names).not.toContain("big.bin");
});

test("remote assets (JSON): the download is a 302 to the URL, counted; a URL that is not http(s) is 400 naming remoteUrl", async () => {
  const remote = await c().post(`${ctx.ws}/assets`, {
    name: "Price list",
    remoteUrl: "https://cdn.example.com/p.pdf",
  });
  expect(remote.status).toBe(201);
  expect(remote.body).toMatchObject({
    name: "Price list",
    remoteUrl: "https://cdn.example.com/p.pdf",
    fileName: null,
    contentType: null,
    size: null,
  });
  const res = await visitor().get(`/api/assets/${remote.body.id}/download`);
  expect(res.status).toBe(302);
  expect(res.headers.get("location")).toBe("https://cdn.example.com/p.pdf");
  expect((await c().get(`${ctx.ws}/assets/${remote.body.id}`)).body.downloads).toBe(1);
  const bad = await c().post(`${ctx.ws}/assets`, { name: "x", remoteUrl: "javascript:alert(1)" });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("remoteUrl");
  const notJson = await c().request("POST", `${ctx.ws}/assets`, {
    raw: "{",
    headers: { "content-type": "application/json" },
  });
  expect(notJson.status).toBe(400);
});

test("list: paginated, newest first; categoryId, search and sort filters; an unknown sort is 400; PATCH renames and moves", async () => {
  const fresh = await ownerWithWorkspace(app.baseUrl);
  const f = fresh.owner.client;
  const docs = await f.post(`${fresh.ws}/assets/categories`, { name: "Docs" });
  const a = await upload(f, fresh.ws, { bytes: Buffer.from("alpha"), name: "alpha.txt", type: "text/plain" });
  const b = await upload(
    f,
    fresh.ws,
    { bytes: PNG, name: "beta.png", type: "image/png" },
    { categoryId: docs.body.id },
  );
  const r = await f.post(`${fresh.ws}/assets`, { name: "Gamma", remoteUrl: "https://example.com/g" });
  const ids = (res: HttpResponse) => res.body.data.map((x: { id: string }) => x.id);

  const all = await f.get(`${fresh.ws}/assets?limit=2`);
  expect(ids(all)).toEqual([r.body.id, b.body.id]);
  expect(all.body.pagination).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
  expect(ids(await f.get(`${fresh.ws}/assets?categoryId=${docs.body.id}`))).toEqual([b.body.id]);
  expect(ids(await f.get(`${fresh.ws}/assets?search=ALPHA`))).toEqual([a.body.id]);
  expect(ids(await f.get(`${fresh.ws}/assets?sort=name`))).toEqual([a.body.id, b.body.id, r.body.id]);
  expect(ids(await f.get(`${fresh.ws}/assets?sort=-size`))).toEqual([b.body.id, a.body.id, r.body.id]);
  const badSort = await f.get(`${fresh.ws}/assets?sort=secret`);
  expect(badSort.status).toBe(400);
  expect(badSort.body.details[0].field).toBe("sort");

  const moved = await f.patch(`${fresh.ws}/assets/${a.body.id}`, {
    name: "Alpha notes",
    categoryId: docs.body.id,
  });
  expect(moved.body).toMatchObject({ name: "Alpha notes", categoryId: docs.body.id });
  expect((await f.patch(`${fresh.ws}/assets/${a.body.id}`, { categoryId: null })).body.categoryId).toBeNull();
  expect((await f.patch(`${fresh.ws}/assets/${a.body.id}`, { categoryId: "nope" })).status).toBe(400);
  expect((await c().get(`${ctx.ws}/assets/${a.body.id}`)).status).toBe(404);
  expect((await c().patch(`${ctx.ws}/assets/${a.body.id}`, { name: "mine" })).status).toBe(404);
});

test("a gated asset opens only with a link token: a form gating it answers the signed download as its redirect, and the download is recorded for the contact", async () => {
  const guide = await upload(
    c(),
    ctx.ws,
    { bytes: Buffer.from("%PDF-1.4\nguide"), name: "guide.pdf", type: "" },
    {
      gated: "true",
    },
  );
  expect(guide.body).toMatchObject({ gated: true, contentType: "application/pdf" });
  const locked = await visitor().get(`/api/assets/${guide.body.id}/download`);
  expect(locked.status).toBe(403);

  const stranger = await ownerWithWorkspace(app.baseUrl);
  const wrongAsset = await stranger.owner.client.post(`${stranger.ws}/forms`, {
    name: "Steal",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
    settings: { assetId: guide.body.id },
  });
  expect(wrongAsset.status).toBe(400);
  expect(wrongAsset.body.details[0].field).toBe("settings.assetId");

  const form = await c().post(`${ctx.ws}/forms`, {
    name: "Get the guide",
    fields: [{ key: "email", label: "Email", type: "email", required: true, mapTo: "email" }],
    settings: { assetId: guide.body.id },
  });
  expect(form.status).toBe(201);
  const submitted = await visitor().post(`/api/forms/${form.body.id}/submit`, {
    email: "reader@example.test",
  });
  expect(submitted.status).toBe(201);
  const link = new URL(submitted.body.redirectUrl);
  expect(link.pathname).toBe(`/api/assets/${guide.body.id}/download`);

  const opened = await visitor().get(`${link.pathname}${link.search}`);
  expect(opened.status).toBe(200);
  expect(opened.text).toBe("%PDF-1.4\nguide");
  const events = (
    await c().get(`${ctx.ws}/events?type=asset.downloaded&contactId=${submitted.body.contactId}`)
  ).body;
  expect(events).toMatchObject([
    { type: "asset.downloaded", metadata: { assetId: guide.body.id, name: "guide.pdf" } },
  ]);

  const tampered = await visitor().get(`${link.pathname}?token=${link.searchParams.get("token")}x`);
  expect(tampered.status).toBe(400);
  expect(tampered.body.code).toBe("INVALID_TOKEN");

  const posted = await visitor().request("POST", `/api/forms/${form.body.id}/submit`, {
    form: { email: "reader2@example.test" },
  });
  expect(posted.status).toBe(303);
  expect(posted.headers.get("location")).toMatch(
    new RegExp(`/api/assets/${guide.body.id}/download\\?token=`),
  );
});

test("deleting an asset removes its file; a viewer reads assets but cannot write them", async () => {
  const doomed = await upload(c(), ctx.ws, { bytes: PNG, name: "doomed.png", type: "image/png" });
  const onDisk = path.join(dataDir, "assets", ctx.workspaceId, doomed.body.id);
  expect(fs.existsSync(onDisk)).toBe(true);
  expect((await c().delete(`${ctx.ws}/assets/${doomed.body.id}`)).body).toEqual({ success: true });
  expect(fs.existsSync(onDisk)).toBe(false);
  expect((await c().get(`${ctx.ws}/assets/${doomed.body.id}`)).status).toBe(404);
  expect((await fetch(`${app.baseUrl}/api/assets/${doomed.body.id}/download`)).status).toBe(404);
  expect((await c().delete(`${ctx.ws}/assets/${doomed.body.id}`)).status).toBe(404);

  const member = await signUp(app.baseUrl, "Viewer");
  const invited = await c().post(`${ctx.ws}/members`, { email: member.email, role: "VIEWER" });
  expect([200, 201]).toContain(invited.status);
  expect((await member.client.get(`${ctx.ws}/assets`)).status).toBe(200);
  expect((await member.client.get(`${ctx.ws}/assets/categories`)).status).toBe(200);
  const refused = await upload(member.client, ctx.ws, { bytes: PNG, name: "v.png", type: "image/png" });
  expect(refused.status).toBe(403);
  expect((await member.client.post(`${ctx.ws}/assets/categories`, { name: "Mine" })).status).toBe(403);
  const mine = (await c().get(`${ctx.ws}/assets?limit=1`)).body.data[0].id;
  expect((await member.client.delete(`${ctx.ws}/assets/${mine}`)).status).toBe(403);
});

test("deleting a workspace deletes its files; an upload a crash left half received is swept at the next start", async () => {
  const doomed = await ownerWithWorkspace(app.baseUrl);
  await upload(doomed.owner.client, doomed.ws, { bytes: PNG, name: "a.png", type: "image/png" });
  const folder = path.join(dataDir, "assets", doomed.workspaceId);
  expect(fs.readdirSync(folder)).toHaveLength(1);
  expect((await doomed.owner.client.delete(doomed.ws)).status).toBe(200);
  await waitFor(() => !fs.existsSync(folder), 5000, "the workspace's folder to go");
  expect(fs.existsSync(path.join(dataDir, "assets", ctx.workspaceId))).toBe(true);

  const incoming = path.join(dataDir, "assets", ".incoming");
  const abandoned = path.join(incoming, "abandoned");
  const fresh = path.join(incoming, "fresh");
  fs.writeFileSync(abandoned, "half");
  fs.writeFileSync(fresh, "in flight");
  const hoursAgo = new Date(Date.now() - 2 * 3600_000);
  fs.utimesSync(abandoned, hoursAgo, hoursAgo);
  const again = await startApp({
    services: ["content"],
    databaseUrl: app.databaseUrl,
    env: { DATA_DIR: dataDir },
  });
  await again.stop();
  expect(fs.readdirSync(incoming)).toEqual(["fresh"]);
  fs.rmSync(fresh);
});
