import { randomUUID } from "node:crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace, signUp } from "../../helpers/http";

/**
 * A contact's companyId and ownerId name a company and a member of its own
 * workspace: another workspace's company, an unknown id or a user who is not
 * a member is 404 naming the field, and nothing is stored (import and ingest
 * fail only that row).
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let ownCompany: string;
let otherCompany: string;
let outsiderId: string;

beforeAll(async () => {
  app = await startApp();
  ctx = await ownerWithWorkspace(app.baseUrl);
  ownCompany = (await ctx.owner.client.post(`${ctx.ws}/companies`, { name: "Own Co" })).body.id;
  const other = await ownerWithWorkspace(app.baseUrl);
  otherCompany = (await other.owner.client.post(`${other.ws}/companies`, { name: "Other Co" })).body.id;
  outsiderId = (await signUp(app.baseUrl, "Outsider")).id;
});
afterAll(() => app.stop());

const count = async (query: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/contacts?search=${encodeURIComponent(query)}`)).body.pagination
    .total;

test("a company and an owner of the workspace are stored", async () => {
  const res = await ctx.owner.client.post(`${ctx.ws}/contacts`, {
    email: "linked@example.test",
    companyId: ownCompany,
    ownerId: ctx.owner.id,
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ companyId: ownCompany, ownerId: ctx.owner.id });
});

test.each([
  ["another workspace's company", () => ({ companyId: otherCompany }), "companyId"],
  ["an unknown company id", () => ({ companyId: randomUUID() }), "companyId"],
  ["a user who is not a member", () => ({ ownerId: outsiderId }), "ownerId"],
  ["an unknown user id", () => ({ ownerId: randomUUID() }), "ownerId"],
])("create with %s is 404 naming the field, and stores nothing", async (_what, refs, field) => {
  const email = `ref-${randomUUID()}@example.test`;
  const res = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email, ...refs() });
  expect(res.status).toBe(404);
  expect(res.body).toMatchObject({ code: "NOT_FOUND", details: [{ field }] });
  expect(await count(email)).toBe(0);
});

test("update with another workspace's company is 404 and leaves the contact as it was", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, { email: "patch-ref@example.test" });
  const res = await ctx.owner.client.patch(`${ctx.ws}/contacts/${created.body.id}`, {
    companyId: otherCompany,
    firstName: "Changed",
  });
  expect(res.status).toBe(404);
  expect(res.body.details).toEqual([{ field: "companyId", message: expect.any(String) }]);
  const after = await ctx.owner.client.get(`${ctx.ws}/contacts/${created.body.id}`);
  expect(after.body).toMatchObject({ companyId: null, firstName: null });
});

test("ingest and import fail only the rows whose references point outside the workspace", async () => {
  const ingested = await ctx.owner.client.post(`${ctx.ws}/contacts/ingest`, {
    contacts: [
      { email: "ingest-ref-ok@example.test", companyId: ownCompany },
      { email: "ingest-ref-bad@example.test", companyId: otherCompany },
      { email: "ingest-owner-bad@example.test", ownerId: outsiderId },
    ],
  });
  expect(ingested.status).toBe(200);
  expect(ingested.body).toEqual({
    created: 1,
    updated: 0,
    failed: [
      { index: 1, error: expect.stringContaining("companyId") },
      { index: 2, error: expect.stringContaining("ownerId") },
    ],
  });

  const csv = `email,companyId\nimport-ref-ok@example.test,${ownCompany}\nimport-ref-bad@example.test,${otherCompany}\n`;
  const started = await ctx.owner.client.request("POST", `${ctx.ws}/contacts/import`, {
    raw: csv,
    headers: { "content-type": "text/csv" },
  });
  const job = await finishedJob(ctx.owner.client, ctx.ws, started.body.jobId);
  expect(job).toMatchObject({
    status: "completed",
    result: { created: 1, failed: [{ line: 3, error: expect.stringContaining("companyId") }] },
  });
  expect(await count("import-ref-bad@example.test")).toBe(0);
  expect(await count("ingest-ref-bad@example.test")).toBe(0);
});
