import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { QueryTypes } from "sequelize";
import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { FakeExternalTool, type FakeMember } from "./fake-externaltool";

/**
 * The external tool integration (contract-messaging 15) against a local
 * fake of its API: preview, import as a job through every page (a 429 on
 * the way), the member upsert push (hash, body, at most 10 at once), and
 * the contract's answers for a refused key, a missing list, a failing API
 * and one out of reach.
 */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
const fake = new FakeExternalTool();
const API_KEY = "0123456789abcdef-us21";
const MEMBERS = 2100;
const STATUSES = ["subscribed", "unsubscribed", "cleaned", "pending"];

const md5 = (text: string) => createHash("md5").update(text).digest("hex");
const basic = (key: string) => `Basic ${Buffer.from(`anystring:${key}`).toString("base64")}`;
const sql = async <T extends object>(text: string, bind: unknown[] = []) =>
  (await database()).query<T>(text, { bind, type: QueryTypes.SELECT });

const members: FakeMember[] = [
  ...Array.from({ length: MEMBERS }, (_, i) => ({
    email_address: `Member${i}@List.test`,
    status: STATUSES[i % 4],
    merge_fields: {
      FNAME: `First${i}`,
      LNAME: i % 2 ? `Last${i}` : "",
      ...(i === 0 ? { PHONE: "+33612345678" } : {}),
    },
    tags: i % 10 === 0 ? [{ id: 1, name: "vip" }] : [],
  })),
  { email_address: "", status: "subscribed", merge_fields: {}, tags: [] },
  { email_address: "not-an-email", status: "subscribed", merge_fields: {}, tags: [] },
];

const post = (path: string, body: unknown) =>
  ctx.owner.client.post(`${ctx.ws}/integrations/externaltool/${path}`, body);
const setTool = (setting: Record<string, unknown>) =>
  ctx.owner.client.patch(ctx.ws, { settings: { externaltool: setting } });
const fields = (res: { body: { details?: Array<{ field: string }> } }) =>
  (res.body.details ?? []).map((d) => d.field);

beforeAll(async () => {
  await fake.start();
  fake.apiKey = API_KEY;
  fake.lists.set("L1", members);
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "segments", "jobs", "integrations"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(async () => {
  await app.stop();
  await fake.stop();
});
beforeEach(() => fake.reset());

test("unset settings: 400 naming settings.externaltool; a bad body: 400 naming its field", async () => {
  for (const [path, body] of [
    ["preview", {}],
    ["import", {}],
    ["contacts", { contactIds: ["x"] }],
  ] as const) {
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(fields(res)).toEqual(["settings.externaltool"]);
  }
  expect(fields(await post("preview", { limit: 51 }))).toContain("limit");
  expect(fields(await post("contacts", { contactIds: Array(1001).fill("x") }))).toContain("contactIds");
  expect(fake.requests).toEqual([]);
});

test("preview: the total, a sample mapped to contact fields, the mapping; Basic auth and count/offset on the wire", async () => {
  expect((await setTool({ baseUrl: `${fake.baseUrl}/`, apiKey: API_KEY, listId: "L1" })).status).toBe(200);
  const res = await post("preview", { limit: 2 });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    total: MEMBERS + 2,
    sample: [
      {
        email: "Member0@List.test",
        firstName: "First0",
        lastName: null,
        phone: "+33612345678",
        status: "subscribed",
        tags: ["vip"],
      },
      {
        email: "Member1@List.test",
        firstName: "First1",
        lastName: "Last1",
        phone: null,
        status: "unsubscribed",
        tags: [],
      },
    ],
    mapping: expect.arrayContaining([
      { remote: "email_address", local: "email" },
      { remote: "merge_fields.FNAME", local: "firstName" },
      { remote: "merge_fields.LNAME", local: "lastName" },
      { remote: "merge_fields.PHONE", local: "phone" },
    ]),
  });
  expect(fake.requests).toEqual([
    expect.objectContaining({
      method: "GET",
      path: "/3.0/lists/L1/members",
      query: { count: "2", offset: "0" },
      authorization: basic(API_KEY),
    }),
  ]);
  // The default sample is 10; listId in the body wins over the setting.
  fake.lists.set("L2", members.slice(0, 12));
  const other = await post("preview", { listId: "L2" });
  expect(other.body.total).toBe(12);
  expect(other.body.sample).toHaveLength(10);
});

test("import: a job through every page (a 429 waited out), statuses to consent, tags added; a second run creates nothing", async () => {
  fake.rateLimitOnce.set(1000, "1");
  const res = await post("import", { tags: ["from-tool"] });
  expect(res.status).toBe(202);
  const job = await finishedJob(ctx.owner.client, ctx.ws, res.body.jobId, 60_000);
  expect(job).toMatchObject({
    type: "integrations.import",
    status: "completed",
    result: { created: MEMBERS, updated: 0, skipped: 2 },
    progress: { done: MEMBERS + 2, total: MEMBERS + 2 },
  });

  // Every page, in count/offset; the rate-limited one asked again after its Retry-After.
  const pages = fake.requests.map((r) => [r.query.offset, r.query.count]);
  expect(pages).toEqual([
    ["0", "1000"],
    ["1000", "1000"],
    ["1000", "1000"],
    ["2000", "1000"],
  ]);
  expect(fake.requests[2].at - fake.requests[1].at).toBeGreaterThanOrEqual(950);
  expect(fake.requests.every((r) => r.authorization === basic(API_KEY))).toBe(true);

  const rows = await sql<{
    email: string;
    first_name: string;
    last_name: string | null;
    phone: string | null;
    tags: string[];
    consent: Record<string, { status: string; source: string }>;
  }>(
    `SELECT email, first_name, last_name, phone, tags, consent FROM contacts WHERE workspace_id = $1 AND email = ANY($2::text[]) ORDER BY email`,
    [ctx.workspaceId, ["member0@list.test", "member1@list.test", "member2@list.test", "member3@list.test"]],
  );
  expect(
    rows.map((r) => [r.email, r.consent.email?.status ?? null, r.consent.email?.source ?? null]),
  ).toEqual([
    ["member0@list.test", "opted_in", "import"],
    ["member1@list.test", "opted_out", "import"],
    ["member2@list.test", "opted_out", "import"],
    ["member3@list.test", null, null],
  ]);
  expect(rows[0]).toMatchObject({ first_name: "First0", last_name: null, phone: "+33612345678" });
  expect(rows[0].tags.sort()).toEqual(["from-tool", "vip"]);
  expect(rows[1]).toMatchObject({ first_name: "First1", last_name: "Last1", tags: ["from-tool"] });

  const again = await post("import", {});
  expect(again.status).toBe(202);
  expect(await finishedJob(ctx.owner.client, ctx.ws, again.body.jobId, 60_000)).toMatchObject({
    status: "completed",
    result: { created: 0, updated: MEMBERS, skipped: 2 },
  });
  const [{ n }] = await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1`,
    [ctx.workspaceId],
  );
  expect(n).toBe(MEMBERS);
});

test("contacts: each pushed by md5(lowercase email) with its fields, at most 10 at once; no email, unknown, refused fail alone", async () => {
  const insert = async (email: string | null, consent: object = {}) => {
    const id = newId();
    await sql(
      `INSERT INTO contacts (id, workspace_id, email, phone, first_name, consent) VALUES ($1, $2, $3, $4, 'Ada', $5::jsonb)`,
      [id, ctx.workspaceId, email, email ? null : "+33612345679", JSON.stringify(consent)],
    );
    return id;
  };
  const mixed = await insert("Ada.Lovelace@Example.test", {
    email: { status: "opted_out", source: "api", updatedAt: new Date().toISOString() },
  });
  const noEmail = await insert(null);
  const refused = await insert("someone@fake.test");
  const imported = (
    await sql<{ id: string; email: string }>(
      `SELECT id, email FROM contacts WHERE workspace_id = $1 AND email LIKE 'member%' ORDER BY email LIMIT 24`,
      [ctx.workspaceId],
    )
  ).map((r) => r.id);
  fake.upsertDelayMs = 40;

  const res = await post("contacts", {
    contactIds: [mixed, noEmail, ...imported, refused, "no-such-contact"],
  });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    pushed: 25,
    failed: [
      { contactId: noEmail, error: "contact has no email" },
      {
        contactId: refused,
        error:
          "400 Invalid Resource: someone@fake.test looks fake or invalid, please enter a real email address.",
      },
      { contactId: "no-such-contact", error: "contact not found" },
    ],
  });
  expect(fake.peakInFlight).toBe(10);
  const puts = fake.requests.filter((r) => r.method === "PUT");
  expect(puts).toHaveLength(26);
  expect(puts.every((r) => r.authorization === basic(API_KEY))).toBe(true);
  expect(fake.upserts.get(`L1/${md5("ada.lovelace@example.test")}`)).toEqual({
    email_address: "Ada.Lovelace@Example.test",
    status_if_new: "unsubscribed",
    merge_fields: { FNAME: "Ada" },
  });
  expect(fake.upserts.get(`L1/${md5("member0@list.test")}`)).toEqual({
    email_address: "member0@list.test",
    status_if_new: "subscribed",
    merge_fields: { FNAME: "First0", PHONE: "+33612345678" },
  });
});

test("contacts of a segment past 1,000: a job paging the segment; a segment of another workspace is 404", async () => {
  const seg = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "From the list",
    filter: { match: "all", conditions: [{ field: "email", operator: "ends_with", value: "@list.test" }] },
  });
  expect([201, 202]).toContain(seg.status);
  await waitFor(
    async () =>
      (await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}`)).body.memberCount === MEMBERS,
    30_000,
    "the segment's members",
  );
  const res = await post("contacts", { segmentId: seg.body.id });
  expect(res.status).toBe(202);
  expect(await finishedJob(ctx.owner.client, ctx.ws, res.body.jobId, 60_000)).toMatchObject({
    type: "integrations.push",
    status: "completed",
    result: { pushed: MEMBERS, failed: [], failedCount: 0 },
    progress: { done: MEMBERS },
  });
  expect(fake.upserts.size).toBe(MEMBERS);

  const missing = await post("contacts", { segmentId: "no-such-segment" });
  expect(missing.status).toBe(404);
  expect(fields(await post("contacts", { segmentId: seg.body.id, contactIds: ["x"] }))).toEqual([
    "contactIds",
  ]);
});

test("a refused key: 400 naming settings.externaltool.apiKey; a missing list: 400 naming listId", async () => {
  await setTool({ baseUrl: fake.baseUrl, apiKey: "revoked-key-0000", listId: "L1" });
  const [contact] = await sql<{ id: string }>(
    `SELECT id FROM contacts WHERE workspace_id = $1 AND email IS NOT NULL LIMIT 1`,
    [ctx.workspaceId],
  );
  for (const [path, body] of [
    ["preview", {}],
    ["import", {}],
    ["contacts", { contactIds: [contact.id] }],
  ] as const) {
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_ERROR");
    expect(fields(res)).toEqual(["settings.externaltool.apiKey"]);
  }
  await setTool({ baseUrl: fake.baseUrl, apiKey: API_KEY, listId: "L1" });
  expect(fields(await post("preview", { listId: "nope" }))).toEqual(["listId"]);
  const jobs = await ctx.owner.client.get(`${ctx.ws}/jobs?type=integrations.import&status=failed`);
  expect(jobs.body.data).toEqual([]);
});

test("a failing API and one out of reach: 502 UPSTREAM_ERROR", async () => {
  fake.failWith = 503;
  expect(await post("preview", {})).toMatchObject({ status: 502, body: { code: "UPSTREAM_ERROR" } });
  expect(await post("import", {})).toMatchObject({ status: 502, body: { code: "UPSTREAM_ERROR" } });

  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await setTool({ baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY, listId: "L1" });
  const [contact] = await sql<{ id: string }>(
    `SELECT id FROM contacts WHERE workspace_id = $1 AND email IS NOT NULL LIMIT 1`,
    [ctx.workspaceId],
  );
  for (const [path, body] of [
    ["preview", {}],
    ["import", {}],
    ["contacts", { contactIds: [contact.id] }],
  ] as const) {
    const res = await post(path, body);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: expect.stringContaining("could not be reached"),
      code: "UPSTREAM_ERROR",
    });
  }
});
