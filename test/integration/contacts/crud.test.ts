import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp, type HttpClient } from "../../helpers/http";
import { domainEventProbe } from "./probe";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let client: HttpClient;
let probe: ReturnType<typeof domainEventProbe>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts"] });
  probe = domainEventProbe(app.broker);
  ctx = await ownerWithWorkspace(app.baseUrl);
  client = ctx.owner.client;
});
afterAll(() => app.stop());

describe("create", () => {
  test("creates a contact with normalised fields and emits contact.created", async () => {
    const res = await client.post(`${ctx.ws}/contacts`, {
      email: "  Ada.Lovelace@Example.COM ",
      phone: "+1 (415) 555-2671",
      firstName: "Ada",
      lastName: "Lovelace",
      locale: "en_gb",
      timezone: "Europe/London",
      country: "GB",
      city: "London",
      tags: ["vip", "vip", " beta "],
      attributes: { plan: "pro", seats: 3 },
      id: "forced-id",
      workspaceId: "other",
      score: 999,
      createdAt: "2000-01-01T00:00:00Z",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email: "ada.lovelace@example.com",
      phone: "+14155552671",
      firstName: "Ada",
      locale: "en-GB",
      timezone: "Europe/London",
      tags: ["vip", "beta"],
      attributes: { plan: "pro", seats: 3 },
      customFields: {},
      score: 0,
      stage: null,
    });
    expect(res.body.id).not.toBe("forced-id");
    expect(res.body.createdAt).not.toContain("2000");
    expect(res.body.consent.email).toEqual({ status: "unknown", source: null, updatedAt: null });
    expect(Object.keys(res.body.consent).sort()).toEqual(["chatapp1", "chatapp2", "email", "push", "sms"]);
    const [event] = await probe.waitFor(
      (e) => e.type === "contact.created" && e.data.contactId === res.body.id,
    );
    expect(event).toMatchObject({
      workspaceId: ctx.workspaceId,
      data: {
        contactId: res.body.id,
        email: "ada.lovelace@example.com",
        firstName: "Ada",
        lastName: "Lovelace",
      },
    });
  });

  test("a second contact with the same email in another case is 409", async () => {
    const first = await client.post(`${ctx.ws}/contacts`, { email: "dup@example.com" });
    expect(first.status).toBe(201);
    const again = await client.post(`${ctx.ws}/contacts`, { email: "DUP@example.com" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("CONFLICT");
  });

  test("the same email in another workspace is fine", async () => {
    const other = await ownerWithWorkspace(app.baseUrl);
    const res = await other.owner.client.post(`${other.ws}/contacts`, { email: "dup@example.com" });
    expect(res.status).toBe(201);
  });

  test.each([
    [{ email: "not-an-email" }, "email"],
    [{ phone: "12345" }, "phone"],
    [{ email: "a@b.co", timezone: "Mars/Olympus" }, "timezone"],
    [{ email: "a@b.co", locale: "!!" }, "locale"],
    [{ email: "a@b.co", tags: "vip" }, "tags"],
    [{ email: "a@b.co", tags: [1, 2] }, "tags[0]"],
    [{ email: "a@b.co", attributes: [1] }, "attributes"],
    [{ email: "a@b.co", customFields: { nope: 1 } }, "customFields.nope"],
    [{ email: "a@b.co", stage: "astronaut" }, "stage"],
    [{ firstName: "Nobody" }, "email"],
  ])("bad input %j is 400 naming %s", async (body, field) => {
    const res = await client.post(`${ctx.ws}/contacts`, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  test("phone or externalId alone identify a contact", async () => {
    expect((await client.post(`${ctx.ws}/contacts`, { phone: "+442071838750" })).status).toBe(201);
    expect((await client.post(`${ctx.ws}/contacts`, { externalId: "crm-1" })).status).toBe(201);
    expect((await client.post(`${ctx.ws}/contacts`, { externalId: "crm-1" })).status).toBe(409);
  });
});

describe("read, update, delete", () => {
  test("get, patch merging attributes, replacing tags, read-only ignored; stage history kept", async () => {
    const created = await client.post(`${ctx.ws}/contacts`, {
      email: "patch@example.com",
      tags: ["a", "b"],
      attributes: { plan: "free", seats: 1, keep: true },
    });
    const id = created.body.id;
    const got = await client.get(`${ctx.ws}/contacts/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);

    const patched = await client.patch(`${ctx.ws}/contacts/${id}`, {
      firstName: "Pat",
      tags: ["c"],
      attributes: { plan: "pro", seats: null },
      stage: "lead",
      id: "x",
      workspaceId: "y",
      score: 50,
      createdAt: "2000-01-01T00:00:00Z",
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id,
      firstName: "Pat",
      email: "patch@example.com",
      tags: ["c"],
      attributes: { plan: "pro", keep: true },
      stage: "lead",
      score: 0,
      createdAt: created.body.createdAt,
    });
    expect(patched.body.attributes).not.toHaveProperty("seats");
    await probe.waitFor(
      (e) => e.type === "contact.updated" && e.data.contactId === id && e.data.firstName === "Pat",
    );

    expect((await client.patch(`${ctx.ws}/contacts/${id}`, { email: "bad" })).status).toBe(400);
    expect((await client.patch(`${ctx.ws}/contacts/${id}`, { email: null })).status).toBe(400); // no identity left
  });

  test("patching onto a taken email is 409", async () => {
    await client.post(`${ctx.ws}/contacts`, { email: "taken@example.com" });
    const other = await client.post(`${ctx.ws}/contacts`, { email: "free@example.com" });
    const res = await client.patch(`${ctx.ws}/contacts/${other.body.id}`, { email: "Taken@Example.com" });
    expect(res.status).toBe(409);
  });

  test("delete answers success, then 404, and emits contact.deleted", async () => {
    const created = await client.post(`${ctx.ws}/contacts`, { email: "gone@example.com" });
    const res = await client.delete(`${ctx.ws}/contacts/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await client.get(`${ctx.ws}/contacts/${created.body.id}`)).status).toBe(404);
    expect((await client.delete(`${ctx.ws}/contacts/${created.body.id}`)).status).toBe(404);
    await probe.waitFor(
      (e) =>
        e.type === "contact.deleted" &&
        e.data.contactId === created.body.id &&
        e.data.email === "gone@example.com",
    );
  });

  test("another workspace's contact is 404 for read, update and delete", async () => {
    const other = await ownerWithWorkspace(app.baseUrl);
    const theirs = await other.owner.client.post(`${other.ws}/contacts`, { email: "theirs@example.com" });
    // Same contact id under our workspace path: not found.
    expect((await client.get(`${ctx.ws}/contacts/${theirs.body.id}`)).status).toBe(404);
    expect((await client.patch(`${ctx.ws}/contacts/${theirs.body.id}`, { firstName: "x" })).status).toBe(404);
    expect((await client.delete(`${ctx.ws}/contacts/${theirs.body.id}`)).status).toBe(404);
    // Their workspace path: not a member.
    expect((await client.get(`${other.ws}/contacts/${theirs.body.id}`)).status).toBe(403);
  });
});

describe("list", () => {
  let listWs: string;
  let c: HttpClient;
  beforeAll(async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    listWs = fresh.ws;
    c = fresh.owner.client;
    const people = [
      {
        email: "alice@acme.com",
        firstName: "Alice",
        lastName: "Smith",
        tags: ["vip"],
        attributes: { plan: "pro" },
        stage: "lead",
      },
      {
        email: "bob@acme.com",
        firstName: "Bob",
        lastName: "Jones",
        tags: ["vip", "beta"],
        attributes: { plan: "free" },
      },
      {
        email: "carol@other.org",
        firstName: "Carol",
        lastName: "Smithers",
        phone: "+33612345678",
        attributes: { plan: "pro", seats: 5 },
      },
      { email: "dave@other.org", firstName: "Dave", lastName: "O'Neil_%", stage: "customer" },
    ];
    for (const p of people) expect((await c.post(`${listWs}/contacts`, p)).status).toBe(201);
  });

  test("paginated envelope, newest first by default, id tie-breaker keeps pages apart", async () => {
    const page1 = await c.get(`${listWs}/contacts?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.pagination).toEqual({ page: 1, limit: 2, total: 4, totalPages: 2 });
    expect(page1.body.data.map((x: { email: string }) => x.email)).toEqual([
      "dave@other.org",
      "carol@other.org",
    ]);
    const page2 = await c.get(`${listWs}/contacts?limit=2&page=2`);
    expect(page2.body.data.map((x: { email: string }) => x.email)).toEqual([
      "bob@acme.com",
      "alice@acme.com",
    ]);
    expect((await c.get(`${listWs}/contacts?limit=1000`)).body.pagination.limit).toBe(100);
  });

  test("search by email, name, phone; wildcards are literal", async () => {
    const emails = async (q: string) =>
      (await c.get(`${listWs}/contacts?search=${encodeURIComponent(q)}&sort=email`)).body.data.map(
        (x: { email: string }) => x.email,
      );
    expect(await emails("smith")).toEqual(["alice@acme.com", "carol@other.org"]);
    expect(await emails("ACME")).toEqual(["alice@acme.com", "bob@acme.com"]);
    expect(await emails("612345")).toEqual(["carol@other.org"]);
    expect(await emails("_%")).toEqual(["dave@other.org"]);
    expect(await emails("%")).toEqual(["dave@other.org"]);
  });

  test("filters: tag, stage, attribute, created range", async () => {
    const emails = async (qs: string) =>
      (await c.get(`${listWs}/contacts?sort=email&${qs}`)).body.data.map((x: { email: string }) => x.email);
    expect(await emails("tag=beta")).toEqual(["bob@acme.com"]);
    expect(await emails("tag=vip")).toEqual(["alice@acme.com", "bob@acme.com"]);
    expect(await emails("stage=customer")).toEqual(["dave@other.org"]);
    expect(await emails("attributes[plan]=pro")).toEqual(["alice@acme.com", "carol@other.org"]);
    expect(await emails("attributes[seats]=5")).toEqual(["carol@other.org"]);
    expect(
      await emails(`createdFrom=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`),
    ).toEqual([]);
    expect(
      await emails(`createdTo=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`),
    ).toHaveLength(4);
    expect((await c.get(`${listWs}/contacts?createdFrom=yesterday-ish`)).status).toBe(400);
  });

  test("sort by a field either way; unknown sort is 400", async () => {
    const asc = await c.get(`${listWs}/contacts?sort=firstName`);
    expect(asc.body.data.map((x: { firstName: string }) => x.firstName)).toEqual([
      "Alice",
      "Bob",
      "Carol",
      "Dave",
    ]);
    const desc = await c.get(`${listWs}/contacts?sort=-firstName`);
    expect(desc.body.data.map((x: { firstName: string }) => x.firstName)).toEqual([
      "Dave",
      "Carol",
      "Bob",
      "Alice",
    ]);
    const bad = await c.get(`${listWs}/contacts?sort=password`);
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("sort");
  });

  test("SQL in search or filters is only text", async () => {
    const res = await c.get(
      `${listWs}/contacts?search=${encodeURIComponent("'; DROP TABLE contacts; --")}&attributes[plan']=x`,
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect((await c.get(`${listWs}/contacts`)).body.pagination.total).toBe(4);
  });
});

describe("access", () => {
  test("API keys need the matching scope; a VIEWER may read but not write", async () => {
    const mk = async (scopes: string[]) =>
      (await client.post(`${ctx.ws}/keys`, { name: "k", scopes })).body.key as string;
    const readKey = await mk(["contacts.read"]);
    const writeKey = await mk(["contacts.write"]);
    const deleteKey = await mk(["contacts.delete"]);
    const anon = app.http();

    expect((await anon.get(`${ctx.ws}/contacts`)).status).toBe(401);
    expect((await anon.get(`${ctx.ws}/contacts`, { bearer: readKey })).status).toBe(200);
    expect(
      (await anon.post(`${ctx.ws}/contacts`, { email: "k@example.com" }, { bearer: readKey })).status,
    ).toBe(403);
    const made = await anon.post(`${ctx.ws}/contacts`, { email: "k@example.com" }, { bearer: writeKey });
    expect(made.status).toBe(201);
    expect((await anon.get(`${ctx.ws}/contacts/${made.body.id}`, { bearer: writeKey })).status).toBe(403);
    expect(
      (await anon.patch(`${ctx.ws}/contacts/${made.body.id}`, { city: "Oslo" }, { bearer: writeKey })).status,
    ).toBe(200);
    expect((await anon.delete(`${ctx.ws}/contacts/${made.body.id}`, { bearer: writeKey })).status).toBe(403);
    expect((await anon.delete(`${ctx.ws}/contacts/${made.body.id}`, { bearer: deleteKey })).status).toBe(200);

    const other = await ownerWithWorkspace(app.baseUrl);
    expect((await anon.get(`${other.ws}/contacts`, { bearer: readKey })).status).toBe(403);

    const viewer = await signUp(app.baseUrl, "Viewer");
    expect((await client.post(`${ctx.ws}/members`, { email: viewer.email, role: "VIEWER" })).status).toBe(
      201,
    );
    expect((await viewer.client.get(`${ctx.ws}/contacts`)).status).toBe(200);
    expect((await viewer.client.post(`${ctx.ws}/contacts`, { email: "v@example.com" })).status).toBe(403);
  });
});

describe("OpenAPI", () => {
  test("every contacts route is described, the import with its CSV body", async () => {
    const doc = (await app.http().get("/api/openapi")).body;
    const paths = Object.keys(doc.paths).filter((p) => p.includes("/contacts"));
    expect(paths.length).toBeGreaterThan(10);
    const imp = Object.entries(doc.paths).find(([p]) => p.endsWith("/contacts/import"))?.[1] as Record<
      string,
      { requestBody?: { content: Record<string, unknown> } }
    >;
    expect(imp?.post?.requestBody?.content).toHaveProperty("text/csv");
    expect(Object.keys(doc.paths).some((p) => p.endsWith("/contacts/{contactId}/gdpr/delete"))).toBe(true);
  });
});
