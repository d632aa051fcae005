import net from "node:net";
import { startApp, type TestApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";
import { HttpClient, ownerWithWorkspace, signUp } from "../../helpers/http";

/**
 * Authenticate, then authorize, then validate: a bad body never tells an
 * anonymous caller or a VIEWER more than 401 or 403. A database out of reach
 * is a 503 with Retry-After, not a 500.
 */
describe("order of refusals", () => {
  let app: TestApp;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let viewer: HttpClient;

  beforeAll(async () => {
    app = await startApp();
    ctx = await ownerWithWorkspace(app.baseUrl);
    const user = await signUp(app.baseUrl, "Viewer");
    expect(
      (await ctx.owner.client.post(`${ctx.ws}/members`, { email: user.email, role: "VIEWER" })).status,
    ).toBe(201);
    viewer = user.client;
  });
  afterAll(() => app.stop());

  const badBodies: Array<[string, string, unknown]> = [
    ["POST", "/contacts", { email: 5, tags: "x" }],
    ["POST", "/events", { type: 7 }],
    ["POST", "/segments", { name: 1, type: "nope" }],
    ["POST", "/webhooks", { url: 3, events: "x" }],
    ["POST", "/companies", { name: [] }],
    ["POST", "/members", { email: 1, role: "KING" }],
    ["PATCH", "", { name: 5 }],
    ["POST", "/stages", { key: 1, position: "x" }],
  ];

  test.each(badBodies)("anonymous %s {ws}%s with a bad body is 401", async (method, path, body) => {
    const res = await app.http().request(method, `${ctx.ws}${path}`, { body });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: "UNAUTHORIZED" });
  });

  test.each(badBodies)("a VIEWER's %s {ws}%s with a bad body is 403", async (method, path, body) => {
    const res = await viewer.request(method, `${ctx.ws}${path}`, { body });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: "FORBIDDEN" });
  });

  test("the OWNER with the same bad body gets the 400 naming the field", async () => {
    const res = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: 5 });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([expect.objectContaining({ field: "email" })]);
  });
});

describe("API keys and members", () => {
  let app: TestApp;
  let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
  let key: HttpClient;

  beforeAll(async () => {
    app = await startApp();
    ctx = await ownerWithWorkspace(app.baseUrl);
    const created = await ctx.owner.client.post(`${ctx.ws}/keys`, {
      name: "people",
      scopes: ["members.manage"],
    });
    key = app.http();
    key.bearer = created.body.key;
  });
  afterAll(() => app.stop());

  test("a key with members.manage lists, adds, changes and removes members", async () => {
    expect((await key.get(`${ctx.ws}/members`)).body).toHaveLength(1);
    const user = await signUp(app.baseUrl, "Hire");
    const added = await key.post(`${ctx.ws}/members`, { email: user.email, role: "MEMBER" });
    expect(added.status).toBe(201);
    const changed = await key.patch(`${ctx.ws}/members/${added.body.id}`, { role: "ADMIN" });
    expect(changed).toMatchObject({ status: 200, body: { role: "ADMIN" } });
    expect((await key.delete(`${ctx.ws}/members/${added.body.id}`)).status).toBe(200);
    expect((await key.get(`${ctx.ws}/members`)).body).toHaveLength(1);
  });

  test("a key may not grant, change or remove the OWNER role", async () => {
    const user = await signUp(app.baseUrl, "Would-be owner");
    expect((await key.post(`${ctx.ws}/members`, { email: user.email, role: "OWNER" })).status).toBe(403);
    const owner = (await key.get(`${ctx.ws}/members`)).body[0];
    expect(owner.role).toBe("OWNER");
    expect((await key.patch(`${ctx.ws}/members/${owner.id}`, { role: "VIEWER" })).status).toBe(403);
    expect((await key.delete(`${ctx.ws}/members/${owner.id}`)).status).toBe(403);
    const added = await key.post(`${ctx.ws}/members`, { email: user.email, role: "MEMBER" });
    expect((await key.patch(`${ctx.ws}/members/${added.body.id}`, { role: "OWNER" })).status).toBe(403);
  });

  test("a key without members.manage is refused with 403", async () => {
    const other = await ctx.owner.client.post(`${ctx.ws}/keys`, {
      name: "reader",
      scopes: ["contacts.read"],
    });
    const res = await app.http().get(`${ctx.ws}/members`, { bearer: other.body.key });
    expect(res.status).toBe(403);
  });
});

describe("PostgreSQL out of reach", () => {
  let app: TestApp;
  let proxy: net.Server;
  const sockets = new Set<net.Socket>();
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // The app reaches its database through a TCP proxy the test can pull.
    const db = await createTestDatabase();
    drop = db.drop;
    const target = new URL(db.url);
    proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
        socket.on("error", () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const viaProxy = new URL(db.url);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String((proxy.address() as net.AddressInfo).port);
    app = await startApp({ databaseUrl: viaProxy.toString() });
  });
  afterAll(async () => {
    await app.stop();
    await drop();
  });

  test("API calls answer 503 SERVICE_UNAVAILABLE with Retry-After", async () => {
    const { owner, ws } = await ownerWithWorkspace(app.baseUrl);
    expect((await owner.client.get(`${ws}/contacts`)).status).toBe(200);

    const closed = new Promise<void>((resolve) => proxy.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;

    for (const send of [
      () => owner.client.get(`${ws}/contacts`),
      () => owner.client.post(`${ws}/contacts`, { email: "late@example.test" }),
      () => owner.client.post(`${ws}/events`, { type: "visit" }),
      () =>
        app
          .http()
          .post("/api/auth/register", { name: "N", email: "n@example.test", password: "long enough" }),
    ]) {
      const res = await send();
      expect({ status: res.status, code: res.body.code }).toEqual({
        status: 503,
        code: "SERVICE_UNAVAILABLE",
      });
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect((await app.http().get("/api/health")).status).toBe(503);
  }, 60_000);
});
