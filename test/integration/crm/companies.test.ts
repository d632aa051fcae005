import { database } from "../../../lib/database";
import { crmWorld, insertContact, type CrmWorld } from "./crm-fixtures";

let w: CrmWorld;
beforeAll(async () => {
  w = await crmWorld({ services: ["contacts"] });
});
afterAll(() => w.app.stop());

test("create answers 201 with every field, the domain normalised", async () => {
  const res = await w.owner.client.post(`${w.ws}/companies`, {
    name: "  Acme Corp ",
    domain: "https://www.ACME.com/about",
    website: "https://acme.com",
    industry: "Manufacturing",
    employeeCount: 250,
    annualRevenue: 12500000.5,
    currency: "eur",
    phone: "+49 30 1234567",
    description: "Makes everything",
    address: { street: "Main St 1", city: "Berlin", postalCode: "10115", country: "de", planet: "Earth" },
    ownerId: w.member.id,
    tags: ["enterprise", "enterprise", "eu"],
    attributes: { tier: "gold", seats: 40 },
    workspaceId: "someone-else",
    id: "forced",
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({
    name: "Acme Corp",
    domain: "acme.com",
    website: "https://acme.com",
    industry: "Manufacturing",
    employeeCount: 250,
    annualRevenue: 12500000.5,
    currency: "EUR",
    address: { street: "Main St 1", city: "Berlin", postalCode: "10115", country: "DE" },
    ownerId: w.member.id,
    tags: ["enterprise", "eu"],
    attributes: { tier: "gold", seats: 40 },
    createdBy: w.owner.id,
  });
  expect(res.body.id).not.toBe("forced");
  expect(res.body.address.planet).toBeUndefined();
  expect(res.body.createdAt).toEqual(expect.any(String));
});

test("a second company with the same domain is 409", async () => {
  const res = await w.owner.client.post(`${w.ws}/companies`, { name: "Acme again", domain: "acme.com" });
  expect(res.status).toBe(409);
  expect(res.body.code).toBe("CONFLICT");
  // Another workspace may use the domain.
  expect(
    (await w.other.owner.client.post(`${w.other.ws}/companies`, { name: "Acme", domain: "acme.com" })).status,
  ).toBe(201);
});

test("invalid fields are 400 naming the field", async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, "name"],
    [{ name: "" }, "name"],
    [{ name: "X", domain: "not a domain" }, "domain"],
    [{ name: "X", website: "ftp//nope" }, "website"],
    [{ name: "X", employeeCount: -1 }, "employeeCount"],
    [{ name: "X", employeeCount: 1.5 }, "employeeCount"],
    [{ name: "X", annualRevenue: "lots" }, "annualRevenue"],
    [{ name: "X", currency: "EURO" }, "currency"],
    [{ name: "X", address: { country: "Germany" } }, "address.country"],
    [{ name: "X", tags: "vip" }, "tags"],
    [{ name: "X", attributes: [1] }, "attributes"],
    [{ name: "X", ownerId: w.other.owner.id }, "ownerId"],
  ];
  for (const [body, field] of cases) {
    const res = await w.owner.client.post(`${w.ws}/companies`, body);
    expect({ body, status: res.status, code: res.body.code }).toEqual({
      body,
      status: 400,
      code: "VALIDATION_ERROR",
    });
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
  }
  // A pattern's message says what it means.
  const coded = await w.owner.client.post(`${w.ws}/companies`, { name: "X", currency: "EURO" });
  expect(coded.body.details).toEqual([
    { field: "currency", message: "must be an ISO 4217 code such as USD" },
  ]);
});

test("list paginates, searches, filters and sorts", async () => {
  const names = ["Globex", "Initech", "Umbrella Health", "Hooli", "Vehement Capital"];
  for (const [i, name] of names.entries()) {
    const res = await w.owner.client.post(`${w.ws}/companies`, {
      name,
      domain: `${name.split(" ")[0].toLowerCase()}.io`,
      industry: i % 2 ? "Finance" : "Software",
      employeeCount: (i + 1) * 10,
      tags: i === 2 ? ["health"] : [],
      address: { country: i === 3 ? "US" : "GB" },
    });
    expect(res.status).toBe(201);
  }
  const page1 = await w.owner.client.get(`${w.ws}/companies?limit=2&sort=name`);
  expect(page1.status).toBe(200);
  expect(page1.body.pagination).toEqual({ page: 1, limit: 2, total: 6, totalPages: 3 });
  expect(page1.body.data.map((c: { name: string }) => c.name)).toEqual(["Acme Corp", "Globex"]);
  const page2 = await w.owner.client.get(`${w.ws}/companies?limit=2&page=2&sort=name`);
  expect(page2.body.data.map((c: { name: string }) => c.name)).toEqual(["Hooli", "Initech"]);

  const search = await w.owner.client.get(`${w.ws}/companies?search=umbrel`);
  expect(search.body.data.map((c: { name: string }) => c.name)).toEqual(["Umbrella Health"]);
  const byDomain = await w.owner.client.get(`${w.ws}/companies?search=hooli.io`);
  expect(byDomain.body.data.map((c: { name: string }) => c.name)).toEqual(["Hooli"]);
  const literal = await w.owner.client.get(`${w.ws}/companies?search=%25`);
  expect(literal.body.data).toEqual([]);

  const finance = await w.owner.client.get(`${w.ws}/companies?industry=finance&sort=-employeeCount`);
  expect(finance.body.data.map((c: { name: string }) => c.name)).toEqual(["Hooli", "Initech"]);
  expect((await w.owner.client.get(`${w.ws}/companies?tag=health`)).body.data).toHaveLength(1);
  expect((await w.owner.client.get(`${w.ws}/companies?country=us`)).body.data[0].name).toBe("Hooli");
  expect((await w.owner.client.get(`${w.ws}/companies?domain=WWW.Globex.io`)).body.data[0].name).toBe(
    "Globex",
  );
  expect((await w.owner.client.get(`${w.ws}/companies?ownerId=${w.member.id}`)).body.data[0].name).toBe(
    "Acme Corp",
  );

  expect((await w.owner.client.get(`${w.ws}/companies?createdTo=2000-01-01`)).body.data).toEqual([]);
  const recent = await w.owner.client.get(
    `${w.ws}/companies?createdFrom=2000-01-01&sort=employeeCount&limit=1`,
  );
  expect(recent.body.data.map((c: { name: string }) => c.name)).toEqual(["Globex"]);
  expect(recent.body.pagination.total).toBe(6);
  // A company without a head count comes first going down (PostgreSQL's order of nulls).
  const largest = await w.owner.client.get(`${w.ws}/companies?sort=-employeeCount&limit=2`);
  expect(largest.body.data.map((c: { name: string }) => c.name)).toEqual(["Acme Corp", "Vehement Capital"]);

  const badSort = await w.owner.client.get(`${w.ws}/companies?sort=password`);
  expect(badSort.status).toBe(400);
  expect(badSort.body.details[0].field).toBe("sort");
  expect((await w.owner.client.get(`${w.ws}/companies?createdFrom=yesterday`)).status).toBe(400);
});

test("update merges address and attributes, replaces tags, and keeps read-only fields", async () => {
  const created = await w.owner.client.post(`${w.ws}/companies`, {
    name: "Patchable",
    address: { city: "Paris", country: "FR" },
    attributes: { a: 1, b: 2 },
    tags: ["x"],
  });
  const id = created.body.id;
  const res = await w.member.client.patch(`${w.ws}/companies/${id}`, {
    address: { city: "Lyon", street: "Rue 1" },
    attributes: { b: null, c: 3 },
    tags: ["y", "z"],
    industry: "Retail",
    domain: "patchable.fr",
    createdBy: "hacker",
    createdAt: "2000-01-01T00:00:00Z",
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    name: "Patchable",
    address: { city: "Lyon", street: "Rue 1", country: "FR" },
    attributes: { a: 1, c: 3 },
    tags: ["y", "z"],
    industry: "Retail",
    domain: "patchable.fr",
    createdBy: w.owner.id,
  });
  expect(res.body.createdAt).toBe(created.body.createdAt);
  const cleared = await w.owner.client.patch(`${w.ws}/companies/${id}`, { industry: null, domain: null });
  expect(cleared.body).toMatchObject({ industry: null, domain: null });

  const taken = await w.owner.client.patch(`${w.ws}/companies/${id}`, { domain: "acme.com" });
  expect(taken.status).toBe(409);
  const bad = await w.owner.client.patch(`${w.ws}/companies/${id}`, { employeeCount: "many" });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].field).toBe("employeeCount");
  expect((await w.owner.client.patch(`${w.ws}/companies/nope`, { name: "x" })).status).toBe(404);
});

test("delete answers success, unlinks its contacts, and is 404 afterwards", async () => {
  const created = await w.owner.client.post(`${w.ws}/companies`, { name: "Doomed" });
  const contactId = await insertContact(w.workspaceId);
  const sequelize = await database();
  await sequelize.query(`UPDATE contacts SET company_id = :c WHERE id = :id`, {
    replacements: { c: created.body.id, id: contactId },
  });

  const res = await w.member.client.delete(`${w.ws}/companies/${created.body.id}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ success: true });
  const [rows] = await sequelize.query(`SELECT company_id FROM contacts WHERE id = :id`, {
    replacements: { id: contactId },
  });
  expect(rows).toEqual([{ company_id: null }]);
  // The unlink is the contacts area's system call; the deletion stays the member's.
  const audit = await w.owner.client.get(`${w.ws}/audit-logs?action=company.deleted`);
  expect(audit.body.data).toEqual([
    expect.objectContaining({ actorType: "user", actorId: w.member.id, targetId: created.body.id }),
  ]);
  expect((await w.owner.client.delete(`${w.ws}/companies/${created.body.id}`)).status).toBe(404);
});

test("another workspace's company is 404 and its list is separate", async () => {
  const mine = await w.owner.client.post(`${w.ws}/companies`, { name: "Private Co" });
  const otherPatch = await w.other.owner.client.patch(`${w.other.ws}/companies/${mine.body.id}`, {
    name: "Stolen",
  });
  expect(otherPatch.status).toBe(404);
  expect(otherPatch.body.code).toBe("NOT_FOUND");
  expect((await w.other.owner.client.delete(`${w.other.ws}/companies/${mine.body.id}`)).status).toBe(404);
  const list = await w.other.owner.client.get(`${w.other.ws}/companies`);
  expect(list.body.data.map((c: { name: string }) => c.name)).toEqual(["Acme"]);
  // A non-member cannot reach the workspace at all.
  expect((await w.other.owner.client.get(`${w.ws}/companies`)).status).toBe(403);
});

test("a VIEWER and a contacts.read key can read but not write; writes are audited", async () => {
  const target = await w.owner.client.post(`${w.ws}/companies`, { name: "Guarded" });
  for (const client of [w.viewer.client, w.readKey]) {
    expect((await client.get(`${w.ws}/companies`)).status).toBe(200);
    expect((await client.post(`${w.ws}/companies`, { name: "Nope" })).status).toBe(403);
    expect((await client.patch(`${w.ws}/companies/${target.body.id}`, { name: "Nope" })).status).toBe(403);
    expect((await client.delete(`${w.ws}/companies/${target.body.id}`)).status).toBe(403);
  }
  const byKey = await w.fullKey.post(`${w.ws}/companies`, { name: "Made by key" });
  expect(byKey.status).toBe(201);
  expect(byKey.body.createdBy).toBeNull();
  const audit = await w.owner.client.get(`${w.ws}/audit-logs?action=company.*`);
  expect(audit.body.data.map((a: { action: string }) => a.action)).toEqual(
    expect.arrayContaining(["company.created", "company.updated", "company.deleted"]),
  );
});
