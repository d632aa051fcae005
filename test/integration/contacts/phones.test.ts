import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";

/**
 * Phone numbers everywhere a contact's phone is taken: any *possible* number
 * is stored as E.164 (also ranges the numbering-plan metadata calls "not
 * valid", such as the fictional +1 555-01xx); text that cannot be a number is
 * a 400 naming the field, or that row's error in an import or ingest.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts", "jobs"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test("create and update keep a possible number as E.164 and refuse what cannot be one", async () => {
  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, { phone: "+1 (555) 010-0111" });
  expect(created.status).toBe(201);
  expect(created.body.phone).toBe("+15550100111");

  const patched = await ctx.owner.client.patch(`${ctx.ws}/contacts/${created.body.id}`, {
    phone: "+447700900123",
  });
  expect(patched.status).toBe(200);
  expect(patched.body.phone).toBe("+447700900123");

  const bad = await ctx.owner.client.post(`${ctx.ws}/contacts`, {
    email: "nophone@example.test",
    phone: "12ab",
  });
  expect(bad.status).toBe(400);
  expect(bad.body.details).toEqual([{ field: "phone", message: expect.stringContaining("E.164") }]);
});

test("ingest and import store possible numbers and fail only the rows whose phone cannot be a number", async () => {
  const ingested = await ctx.owner.client.post(`${ctx.ws}/contacts/ingest`, {
    contacts: [
      { email: "ingest-ok@example.test", phone: "+15550100112" },
      { email: "ingest-bad@example.test", phone: "phone" },
    ],
  });
  expect(ingested.status).toBe(200);
  expect(ingested.body).toMatchObject({
    created: 1,
    failed: [{ index: 1, error: expect.stringContaining("phone") }],
  });

  const csv = "email,phone\nimport-ok@example.test,+1 555 010 0113\nimport-bad@example.test,not a number\n";
  const started = await ctx.owner.client.request("POST", `${ctx.ws}/contacts/import`, {
    raw: csv,
    headers: { "content-type": "text/csv" },
  });
  expect(started.status).toBe(202);
  const job = await finishedJob(ctx.owner.client, ctx.ws, started.body.jobId);
  expect(job).toMatchObject({ status: "completed", result: { created: 1, failed: [{ line: 3 }] } });

  const found = await ctx.owner.client.get(`${ctx.ws}/contacts?search=ok%40example.test&limit=10`);
  expect(found.body.data.map((c: { phone: string }) => c.phone).sort()).toEqual([
    "+15550100112",
    "+15550100113",
  ]);
});

test("do-not-contact phone entries take the same rule", async () => {
  const added = await ctx.owner.client.post(`${ctx.ws}/contacts/dnc`, {
    type: "phone",
    value: "+1 555 010 0199",
  });
  expect(added.status).toBe(201);
  expect(added.body.value).toBe("+15550100199");
  const bad = await ctx.owner.client.post(`${ctx.ws}/contacts/dnc`, { type: "phone", value: "555" });
  expect(bad.status).toBe(400);
  expect(bad.body.details).toEqual([{ field: "value", message: expect.stringContaining("E.164") }]);
});
