import { QueryTypes, type Sequelize } from "sequelize";
import { randomUUID } from "node:crypto";
import { database } from "../../../lib/database";
import { systemCall } from "../../../lib/system-call";
import { startApp, type TestApp } from "../../helpers/app";
import { finishedJob, ownerWithWorkspace, type HttpClient } from "../../helpers/http";
import { domainEventProbe } from "./probe";
import { asWorkspaceId } from "../../../lib/tenancy";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let client: HttpClient;
let probe: ReturnType<typeof domainEventProbe>;
let db: Sequelize;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts", "jobs"] });
  probe = domainEventProbe(app.broker);
  ctx = await ownerWithWorkspace(app.baseUrl);
  client = ctx.owner.client;
  db = await database();
});
afterAll(() => app.stop());

const newContact = async (body: Record<string, unknown>, c = client, ws = ctx.ws) => {
  const res = await c.post(`${ws}/contacts`, body);
  if (res.status !== 201) throw new Error(`create failed ${res.status} ${res.text}`);
  return res.body as { id: string; email: string };
};

/** Rows of other areas that point at a contact, written straight to their tables (their services are not under test here). */
async function relatedRows(workspaceId: string, contactId: string, tag: string) {
  const eventId = randomUUID();
  await db.query(
    `INSERT INTO events (id, workspace_id, contact_id, type, metadata) VALUES ($1, $2, $3, 'purchase', $4::jsonb)`,
    {
      bind: [eventId, workspaceId, contactId, JSON.stringify({ tag })],
    },
  );
  await db.query(
    `INSERT INTO score_history (id, workspace_id, contact_id, points, reason) VALUES ($1, $2, $3, 5, $4)`,
    {
      bind: [randomUUID(), workspaceId, contactId, tag],
    },
  );
  const pipelineId = randomUUID();
  await db.query(`INSERT INTO pipelines (id, workspace_id, name) VALUES ($1, $2, $3)`, {
    bind: [pipelineId, workspaceId, `p-${tag}`],
  });
  await db.query(
    `INSERT INTO deals (id, workspace_id, title, currency, pipeline_id, stage_id, contact_id) VALUES ($1, $2, $3, 'EUR', $4, 's1', $5)`,
    {
      bind: [randomUUID(), workspaceId, `deal-${tag}`, pipelineId, contactId],
    },
  );
  await db.query(`INSERT INTO tasks (id, workspace_id, title, contact_id) VALUES ($1, $2, $3, $4)`, {
    bind: [randomUUID(), workspaceId, `task-${tag}`, contactId],
  });
  return { eventId };
}

async function segmentWith(workspaceId: string, contactIds: string[]) {
  const id = randomUUID();
  await db.query(`INSERT INTO segments (id, workspace_id, name, type) VALUES ($1, $2, $3, 'static')`, {
    bind: [id, workspaceId, `s-${id}`],
  });
  for (const c of contactIds)
    await db.query(`INSERT INTO segment_members (segment_id, contact_id) VALUES ($1, $2)`, { bind: [id, c] });
  return id;
}

const count = async (table: string, contactId: string) =>
  Number(
    (
      await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE contact_id = $1`, {
        bind: [contactId],
        type: QueryTypes.SELECT,
      })
    )[0].n,
  );

describe("duplicates", () => {
  test("candidates by email key, phone and similar name; workspace groups", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    const me = await newContact(
      { email: "john.doe+news@mail.com", firstName: "Jonathan", lastName: "Smithson", phone: "+14155552671" },
      c,
      fresh.ws,
    );
    const byEmail = await newContact({ email: "johndoe@mail.com" }, c, fresh.ws);
    const byPhone = await newContact({ email: "other@x.io", phone: "+1 415 555 2671" }, c, fresh.ws);
    const byName = await newContact(
      { email: "js@y.io", firstName: "Jonathan", lastName: "Smithsen" },
      c,
      fresh.ws,
    );
    await newContact({ email: "unrelated@z.io", firstName: "Mary", lastName: "Major" }, c, fresh.ws);

    const res = await c.get(`${fresh.ws}/contacts/${me.id}/duplicates`);
    expect(res.status).toBe(200);
    expect(res.body.map((d: { contact: { id: string } }) => d.contact.id)).toEqual([
      byEmail.id,
      byPhone.id,
      byName.id,
    ]);
    expect(res.body[0].reasons).toEqual(["email"]);
    expect(res.body[1].reasons).toEqual(["phone"]);
    expect(res.body[2].reasons).toEqual(["name"]);
    expect(res.body[2].score).toBeGreaterThan(0.4);
    expect((await c.get(`${fresh.ws}/contacts/nope/duplicates`)).status).toBe(404);

    const groups = await c.get(`${fresh.ws}/contacts/duplicates`);
    expect(groups.status).toBe(200);
    expect(groups.body.pagination.total).toBe(2);
    const reasons = groups.body.data.map((g: { reason: string }) => g.reason).sort();
    expect(reasons).toEqual(["email", "phone"]);
    const phoneGroup = groups.body.data.find((g: { reason: string }) => g.reason === "phone");
    expect(phoneGroup.contacts.map((x: { id: string }) => x.id)).toEqual([me.id, byPhone.id]);
  });
});

describe("merge", () => {
  test("moves events, notes, scores, deals, tasks, stage history and memberships onto the primary, in one go", async () => {
    const primary = await newContact({
      email: "p@m.io",
      firstName: "Pat",
      tags: ["a"],
      attributes: { plan: "pro" },
      stage: "lead",
    });
    const dup1 = await newContact({
      email: "d1@m.io",
      lastName: "Doe",
      phone: "+33612345678",
      tags: ["b"],
      attributes: { plan: "free", seats: 2 },
    });
    const dup2 = await newContact({ externalId: "crm-9", city: "Oslo", tags: ["a", "c"] });
    await client.put(`${ctx.ws}/contacts/${dup2.id}/consent`, { channel: "email", status: "opted_out" });
    await client.post(`${ctx.ws}/contacts/${dup1.id}/notes`, { body: "note on dup1" });
    await client.post(`${ctx.ws}/contacts/${dup1.id}/stages`, { stage: "customer" });
    await relatedRows(ctx.workspaceId, dup1.id, "d1");
    await relatedRows(ctx.workspaceId, dup2.id, "d2");
    await relatedRows(ctx.workspaceId, primary.id, "p");
    const shared = await segmentWith(ctx.workspaceId, [primary.id, dup1.id]);
    const onlyDup = await segmentWith(ctx.workspaceId, [dup2.id]);

    const res = await client.post(`${ctx.ws}/contacts/merge`, {
      primaryId: primary.id,
      duplicateIds: [dup1.id, dup2.id],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: primary.id,
      email: "p@m.io",
      firstName: "Pat",
      lastName: "Doe",
      phone: "+33612345678",
      externalId: "crm-9",
      city: "Oslo",
      stage: "lead",
      tags: ["a", "b", "c"],
      attributes: { plan: "pro", seats: 2 },
    });
    expect(res.body.consent.email).toMatchObject({ status: "opted_out" });

    for (const id of [dup1.id, dup2.id])
      expect((await client.get(`${ctx.ws}/contacts/${id}`)).status).toBe(404);
    for (const table of [
      "events",
      "score_history",
      "deals",
      "tasks",
      "contact_notes",
      "contact_stage_history",
    ]) {
      for (const id of [dup1.id, dup2.id]) expect(await count(table, id)).toBe(0);
    }
    expect(await count("events", primary.id)).toBe(3);
    expect(await count("score_history", primary.id)).toBe(3);
    expect(await count("deals", primary.id)).toBe(3);
    expect(await count("tasks", primary.id)).toBe(3);
    expect(await count("contact_notes", primary.id)).toBe(1);
    expect(await count("contact_stage_history", primary.id)).toBeGreaterThanOrEqual(1);
    const members = await db.query<{ segment_id: string }>(
      `SELECT segment_id FROM segment_members WHERE contact_id = $1 ORDER BY segment_id`,
      {
        bind: [primary.id],
        type: QueryTypes.SELECT,
      },
    );
    expect(members.map((m) => m.segment_id).sort()).toEqual([shared, onlyDup].sort());

    await probe.waitFor((e) => e.type === "contact.deleted" && e.data.contactId === dup1.id);
    await probe.waitFor(
      (e) => e.type === "contact.updated" && e.data.contactId === primary.id && e.data.lastName === "Doe",
    );
  });

  test("another workspace's ids are 404 and nothing changes; bad bodies are 400; a write-only key is 403", async () => {
    const other = await ownerWithWorkspace(app.baseUrl);
    const theirs = await newContact({ email: "t@o.io" }, other.owner.client, other.ws);
    const mine = await newContact({ email: "mine@m.io" });
    const res = await client.post(`${ctx.ws}/contacts/merge`, {
      primaryId: mine.id,
      duplicateIds: [theirs.id],
    });
    expect(res.status).toBe(404);
    expect((await other.owner.client.get(`${other.ws}/contacts/${theirs.id}`)).status).toBe(200);
    expect(
      (await client.post(`${ctx.ws}/contacts/merge`, { primaryId: theirs.id, duplicateIds: [mine.id] }))
        .status,
    ).toBe(404);
    expect((await client.get(`${ctx.ws}/contacts/${mine.id}`)).status).toBe(200);

    expect(
      (await client.post(`${ctx.ws}/contacts/merge`, { primaryId: mine.id, duplicateIds: [mine.id] })).status,
    ).toBe(400);
    expect(
      (await client.post(`${ctx.ws}/contacts/merge`, { primaryId: mine.id, duplicateIds: [] })).status,
    ).toBe(400);
    const key = (await client.post(`${ctx.ws}/keys`, { name: "w", scopes: ["contacts.write"] })).body.key;
    const dup = await newContact({ email: "dupx@m.io" });
    expect(
      (
        await app
          .http()
          .post(`${ctx.ws}/contacts/merge`, { primaryId: mine.id, duplicateIds: [dup.id] }, { bearer: key })
      ).status,
    ).toBe(403);
  });
});

describe("GDPR", () => {
  test("export holds each kind of record; delete leaves none, emits contact.deleted and is audited", async () => {
    const person = await newContact({ email: "gdpr@x.io", firstName: "Gee" });
    await client.put(`${ctx.ws}/contacts/${person.id}/consent`, { channel: "sms", status: "opted_out" });
    await client.post(`${ctx.ws}/contacts/${person.id}/notes`, { body: "called them" });
    await client.post(`${ctx.ws}/contacts/${person.id}/stages`, { stage: "customer", reason: "paid" });
    const { eventId } = await relatedRows(ctx.workspaceId, person.id, "g");
    await segmentWith(ctx.workspaceId, [person.id]);
    const threadId = randomUUID();
    await db.query(
      `INSERT INTO inbox_threads (id, workspace_id, channel, contact_id, subject, status, last_message_at)
       VALUES ($1, $2, 'email', $3, 'Order 7', 'closed', now())`,
      { bind: [threadId, ctx.workspaceId, person.id] },
    );
    for (const [direction, body, status, at] of [
      ["inbound", "Where is my order?", "received", "2026-01-01T10:00:00Z"],
      ["outbound", "On its way.", "sent", "2026-01-01T11:00:00Z"],
    ])
      await db.query(
        `INSERT INTO inbox_messages (id, workspace_id, thread_id, direction, body, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        { bind: [randomUUID(), ctx.workspaceId, threadId, direction, body, status, at] },
      );

    const exp = await client.get(`${ctx.ws}/contacts/${person.id}/gdpr/export`);
    expect(exp.status).toBe(200);
    expect(exp.body.contact).toMatchObject({ id: person.id, email: "gdpr@x.io" });
    expect(exp.body.consent.sms.status).toBe("opted_out");
    expect(exp.body.events).toEqual([
      expect.objectContaining({ id: eventId, type: "purchase", metadata: { tag: "g" } }),
    ]);
    expect(exp.body.notes).toEqual([expect.objectContaining({ body: "called them" })]);
    expect(exp.body.scores).toEqual([expect.objectContaining({ points: 5, reason: "g" })]);
    expect(exp.body.stageHistory).toEqual([expect.objectContaining({ toStage: "customer", reason: "paid" })]);
    expect(exp.body.deals).toHaveLength(1);
    expect(exp.body.tasks).toHaveLength(1);
    expect(exp.body.segments).toHaveLength(1);
    expect(exp.body.messages).toEqual([]);
    expect(exp.body.formSubmissions).toEqual([]);
    expect(exp.body.conversations).toEqual([
      expect.objectContaining({
        id: threadId,
        channel: "email",
        subject: "Order 7",
        status: "closed",
        contactId: person.id,
        messages: [
          expect.objectContaining({
            direction: "inbound",
            body: "Where is my order?",
            status: "received",
            createdAt: "2026-01-01T10:00:00.000Z",
          }),
          expect.objectContaining({ direction: "outbound", body: "On its way.", status: "sent" }),
        ],
      }),
    ]);
    expect(JSON.stringify(exp.body)).not.toContain(ctx.workspaceId);

    const del = await client.delete(`${ctx.ws}/contacts/${person.id}/gdpr/delete`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await client.get(`${ctx.ws}/contacts/${person.id}`)).status).toBe(404);
    for (const table of [
      "events",
      "score_history",
      "contact_notes",
      "contact_stage_history",
      "segment_members",
      "segment_membership_log",
      "deals",
      "tasks",
    ]) {
      expect(await count(table, person.id)).toBe(0);
    }
    await probe.waitFor((e) => e.type === "contact.deleted" && e.data.contactId === person.id);
    const audit = await client.get(`${ctx.ws}/audit-logs?action=contact.gdpr_deleted`);
    expect(audit.body.data[0]).toMatchObject({ action: "contact.gdpr_deleted", targetId: person.id });
    expect((await client.delete(`${ctx.ws}/contacts/${person.id}/gdpr/delete`)).status).toBe(404);
  });
});

describe("notes, timeline, stages", () => {
  test("notes carry their author; the timeline merges notes, stage changes and events newest first", async () => {
    const person = await newContact({ email: "t@l.io" });
    const note = await client.post(`${ctx.ws}/contacts/${person.id}/notes`, { body: "first" });
    expect(note.status).toBe(201);
    expect(note.body).toMatchObject({
      body: "first",
      author: { type: "user", id: ctx.owner.id, name: "Owner" },
    });
    expect((await client.post(`${ctx.ws}/contacts/${person.id}/notes`, { body: "" })).status).toBe(400);
    const key = (
      await client.post(`${ctx.ws}/keys`, { name: "n", scopes: ["contacts.write", "contacts.read"] })
    ).body;
    const byKey = await app
      .http()
      .post(`${ctx.ws}/contacts/${person.id}/notes`, { body: "from a key" }, { bearer: key.key });
    expect(byKey.body.author).toEqual({ type: "api_key", id: key.id, name: null });

    await client.post(`${ctx.ws}/contacts/${person.id}/stages`, { stage: "lead" });
    await db.query(
      `INSERT INTO events (id, workspace_id, contact_id, type, timestamp) VALUES ($1, $2, $3, 'page_view', now() + interval '1 minute')`,
      {
        bind: [randomUUID(), ctx.workspaceId, person.id],
      },
    );
    const notes = await client.get(`${ctx.ws}/contacts/${person.id}/notes`);
    expect(notes.body.data.map((n: { body: string }) => n.body)).toEqual(["from a key", "first"]);

    const tl = await client.get(`${ctx.ws}/contacts/${person.id}/timeline?limit=3`);
    expect(tl.status).toBe(200);
    expect(tl.body.pagination).toEqual({ page: 1, limit: 3, total: 4, totalPages: 2 });
    expect(tl.body.data.map((i: { kind: string }) => i.kind)).toEqual(["event", "stage_change", "note"]);
    expect(tl.body.data[0].data.type).toBe("page_view");
    expect(tl.body.data[1].data).toMatchObject({ from: null, to: "lead" });
    const page2 = await client.get(`${ctx.ws}/contacts/${person.id}/timeline?limit=3&page=2`);
    expect(page2.body.data.map((i: { data: { body: string } }) => i.data.body)).toEqual(["first"]);
  });

  test("contact stage set and history; stage definitions CRUD with counts and guards", async () => {
    const person = await newContact({ email: "s@l.io" });
    const set = await client.post(`${ctx.ws}/contacts/${person.id}/stages`, {
      stage: "mql",
      reason: "downloaded",
    });
    expect(set.status).toBe(201);
    expect(set.body.stage).toBe("mql");
    expect(set.body.history[0]).toMatchObject({
      from: null,
      to: "mql",
      reason: "downloaded",
      changedBy: { type: "user", id: ctx.owner.id },
    });
    await client.post(`${ctx.ws}/contacts/${person.id}/stages`, { stage: "sql" });
    const got = await client.get(`${ctx.ws}/contacts/${person.id}/stages`);
    expect(got.body.history.map((h: { to: string }) => h.to)).toEqual(["sql", "mql"]);
    expect((await client.post(`${ctx.ws}/contacts/${person.id}/stages`, { stage: "nope" })).status).toBe(400);

    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    const list = await c.get(`${fresh.ws}/stages`);
    expect(list.status).toBe(200);
    expect(list.body.map((s: { key: string }) => s.key)).toEqual([
      "subscriber",
      "lead",
      "mql",
      "sql",
      "opportunity",
      "customer",
      "evangelist",
      "other",
    ]);
    const made = await c.post(`${fresh.ws}/stages`, { key: "churned", name: "Churned", color: "#999" });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ key: "churned", name: "Churned", position: 8, contactCount: 0 });
    expect((await c.post(`${fresh.ws}/stages`, { key: "churned", name: "Again" })).status).toBe(409);
    expect((await c.post(`${fresh.ws}/stages`, { key: "Bad Key", name: "x" })).status).toBe(400);
    const renamed = await c.patch(`${fresh.ws}/stages/${made.body.id}`, {
      name: "Lost",
      position: 0,
      key: "ignored",
    });
    expect(renamed.body).toMatchObject({ key: "churned", name: "Lost", position: 0 });
    const who = await newContact({ email: "w@s.io", stage: "churned" }, c, fresh.ws);
    expect(
      (await c.get(`${fresh.ws}/stages`)).body.find((s: { key: string }) => s.key === "churned").contactCount,
    ).toBe(1);
    expect((await c.delete(`${fresh.ws}/stages/${made.body.id}`)).status).toBe(409);
    await c.patch(`${fresh.ws}/contacts/${who.id}`, { stage: null });
    expect((await c.delete(`${fresh.ws}/stages/${made.body.id}`)).body).toEqual({ success: true });
    expect((await c.patch(`${fresh.ws}/stages/${made.body.id}`, { name: "x" })).status).toBe(404);
    expect((await client.patch(`${ctx.ws}/stages/${list.body[0].id}`, { name: "x" })).status).toBe(404);
  });
});

describe("custom fields", () => {
  test("typed fields are defined, grouped and applied when contacts are written", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    const group = await c.post(`${fresh.ws}/custom-fields/groups`, { name: "Profile" });
    expect(group.status).toBe(201);
    expect((await c.post(`${fresh.ws}/custom-fields/groups`, { name: "Profile" })).status).toBe(409);
    const defs = [
      { key: "size", label: "Company size", type: "number", groupId: group.body.id },
      { key: "since", label: "Customer since", type: "date" },
      { key: "vip", label: "VIP", type: "boolean" },
      { key: "tier", label: "Tier", type: "select", options: ["gold", "silver"] },
      { key: "langs", label: "Languages", type: "multi-select", options: ["en", "fr", "de"] },
      { key: "bio", label: "Bio", type: "text" },
    ];
    for (const d of defs) expect((await c.post(`${fresh.ws}/custom-fields`, d)).status).toBe(201);
    expect(
      (await c.post(`${fresh.ws}/custom-fields`, { key: "size", label: "x", type: "text" })).status,
    ).toBe(409);
    expect(
      (await c.post(`${fresh.ws}/custom-fields`, { key: "t2", label: "x", type: "select" })).body.details[0]
        .field,
    ).toBe("options");
    expect((await c.post(`${fresh.ws}/custom-fields`, { key: "t3", label: "x", type: "color" })).status).toBe(
      400,
    );
    expect(
      (await c.post(`${fresh.ws}/custom-fields`, { key: "t4", label: "x", type: "text", groupId: "nope" }))
        .status,
    ).toBe(400);

    const fields = await c.get(`${fresh.ws}/custom-fields`);
    expect(fields.body.map((f: { key: string }) => f.key)).toEqual([
      "size",
      "since",
      "vip",
      "tier",
      "langs",
      "bio",
    ]);
    expect(
      (await c.get(`${fresh.ws}/custom-fields?groupId=${group.body.id}`)).body.map(
        (f: { key: string }) => f.key,
      ),
    ).toEqual(["size"]);
    expect((await c.get(`${fresh.ws}/custom-fields/groups`)).body).toEqual([
      expect.objectContaining({ name: "Profile", fields: 1 }),
    ]);

    const ok = await c.post(`${fresh.ws}/contacts`, {
      email: "cf@x.io",
      customFields: {
        size: 50,
        since: "2024-02-29",
        vip: true,
        tier: "gold",
        langs: ["en", "fr"],
        bio: "hi",
      },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.customFields).toEqual({
      size: 50,
      since: "2024-02-29",
      vip: true,
      tier: "gold",
      langs: ["en", "fr"],
      bio: "hi",
    });
    for (const [customFields, field] of [
      [{ size: "many" }, "customFields.size"],
      [{ since: "2024-13-01" }, "customFields.since"],
      [{ vip: "yes" }, "customFields.vip"],
      [{ tier: "bronze" }, "customFields.tier"],
      [{ langs: ["es"] }, "customFields.langs"],
      [{ unknown: 1 }, "customFields.unknown"],
    ] as const) {
      const res = await c.patch(`${fresh.ws}/contacts/${ok.body.id}`, { customFields });
      expect(res.status).toBe(400);
      expect(res.body.details[0].field).toBe(field);
    }
    const patched = await c.patch(`${fresh.ws}/contacts/${ok.body.id}`, {
      customFields: { size: 51, bio: null },
    });
    expect(patched.body.customFields).toEqual({
      size: 51,
      since: "2024-02-29",
      vip: true,
      tier: "gold",
      langs: ["en", "fr"],
    });

    // CSV import coerces text forms by type and reports wrong ones by line.
    const csv =
      "email,customFields.size,customFields.vip,customFields.langs\ncsv1@x.io,12,yes,en;de\ncsv2@x.io,lots,no,\n";
    const imp = await c.request("POST", `${fresh.ws}/contacts/import`, {
      raw: csv,
      headers: { "content-type": "text/csv" },
    });
    const job = await finishedJob(c, fresh.ws, imp.body.jobId);
    expect(job.status).toBe("completed");
    expect(job.result).toMatchObject({
      created: 1,
      failed: [{ line: 3, error: "customFields.size must be a number" }],
    });
    expect((await c.get(`${fresh.ws}/contacts?search=csv1`)).body.data[0].customFields).toEqual({
      size: 12,
      vip: true,
      langs: ["en", "de"],
    });

    const required = await c.post(`${fresh.ws}/custom-fields`, {
      key: "region",
      label: "Region",
      type: "text",
      required: true,
    });
    expect(required.status).toBe(201);
    const missing = await c.post(`${fresh.ws}/contacts`, { email: "req@x.io" });
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].field).toBe("customFields.region");
  });

  test("a required custom field is checked per row on import and ingest: a new contact without it fails alone", async () => {
    const fresh = await ownerWithWorkspace(app.baseUrl);
    const c = fresh.owner.client;
    // Stored before the field becomes required: it has no region.
    const older = await newContact({ email: "older@x.io" }, c, fresh.ws);
    await newContact({ email: "placed@x.io", externalId: "placed", customFields: {} }, c, fresh.ws);
    expect(
      (
        await c.post(`${fresh.ws}/custom-fields`, {
          key: "region",
          label: "Region",
          type: "text",
          required: true,
        })
      ).status,
    ).toBe(201);
    await c.post(`${fresh.ws}/custom-fields`, { key: "size", label: "Size", type: "number" });
    await c
      .patch(`${fresh.ws}/contacts/${older.id}`, { firstName: "Still" })
      .then((r) => expect(r.status).toBe(200));

    const csv = [
      "email,firstName,customFields.region,customFields.size",
      "imp-ok@x.io,Ok,north,",
      "imp-missing@x.io,Missing,,",
      "older@x.io,Renamed,,",
      "older@x.io,Sized,,3",
      "older@x.io,Placed,south,4",
    ].join("\n");
    const imp = await c.request("POST", `${fresh.ws}/contacts/import`, {
      raw: `${csv}\n`,
      headers: { "content-type": "text/csv" },
    });
    const job = await finishedJob(c, fresh.ws, imp.body.jobId);
    expect(job.status).toBe("completed");
    // An update that writes no custom field keeps the contact as it is; one that writes some may not leave region empty.
    expect(job.result).toMatchObject({
      created: 1,
      updated: 2,
      failed: [
        { line: 3, error: "customFields.region is required" },
        { line: 5, error: "customFields.region is required" },
      ],
    });
    expect((await c.get(`${fresh.ws}/contacts?search=imp-missing`)).body.data).toEqual([]);
    const olderNow = (await c.get(`${fresh.ws}/contacts/${older.id}`)).body;
    expect(olderNow).toMatchObject({ firstName: "Placed", customFields: { region: "south", size: 4 } });

    const ingest = await c.post(`${fresh.ws}/contacts/ingest`, {
      contacts: [
        { email: "ing-ok@x.io", customFields: { region: "east" } },
        { email: "ing-missing@x.io", customFields: { size: 1 } },
        { externalId: "ing-ext" },
        { externalId: "placed", customFields: { size: 2 } },
        { email: "older@x.io", customFields: { region: null, size: 5 } },
        { email: "ing-null@x.io", customFields: { region: null } },
      ],
    });
    expect(ingest.status).toBe(200);
    // A null in a batch row is "no value": it never removes older@x.io's stored region.
    expect(ingest.body).toEqual({
      created: 1,
      updated: 1,
      failed: [
        { index: 1, error: "customFields.region is required" },
        { index: 2, error: "customFields.region is required" },
        { index: 3, error: "customFields.region is required" },
        { index: 5, error: "customFields.region is required" },
      ],
    });
    expect((await c.get(`${fresh.ws}/contacts/${older.id}`)).body.customFields).toEqual({
      region: "south",
      size: 5,
    });
    const listed = (await c.get(`${fresh.ws}/contacts?sort=email&limit=100`)).body.data.map(
      (x: { email: string | null; externalId: string | null }) => x.email ?? x.externalId,
    );
    expect(listed).toEqual(["imp-ok@x.io", "ing-ok@x.io", "older@x.io", "placed@x.io"]);
  });
});

describe("exports of one contact and chatapp1 link", () => {
  test("GET export is a CSV row; POST with format json gives the profile with notes and stages", async () => {
    const person = await newContact({ email: "one@x.io", attributes: { plan: "pro" }, tags: ["a", "b"] });
    await client.post(`${ctx.ws}/contacts/${person.id}/notes`, { body: "n1" });
    const csv = await client.get(`${ctx.ws}/contacts/${person.id}/export`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    const lines = csv.text.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^id,email,.*,attributes\.plan$/);
    expect(lines[1]).toContain("one@x.io");
    expect(lines[1]).toContain("a;b");
    const json = await client.post(`${ctx.ws}/contacts/${person.id}/export`, { format: "json" });
    expect(json.status).toBe(200);
    expect(json.body.contact.id).toBe(person.id);
    expect(json.body.notes.map((n: { body: string }) => n.body)).toEqual(["n1"]);
    expect(
      (await client.post(`${ctx.ws}/contacts/${person.id}/export`, {})).headers.get("content-type"),
    ).toContain("text/csv");
    expect((await client.get(`${ctx.ws}/contacts/nope/export`)).status).toBe(404);
  });

  test("chatapp1-link needs a configured bot, gives a one-time token stored hashed, redeemed once", async () => {
    const person = await newContact({ email: "chat@x.io" });
    const unset = await client.get(`${ctx.ws}/contacts/${person.id}/chatapp1-link`);
    expect(unset.status).toBe(400);
    expect(
      (await client.patch(ctx.ws, { settings: { chatapp1: { botUrl: "https://chat.example/bot/acme" } } }))
        .status,
    ).toBe(200);
    const res = await client.get(`${ctx.ws}/contacts/${person.id}/chatapp1-link`);
    expect(res.status).toBe(200);
    expect(res.body.url).toBe(`https://chat.example/bot/acme?start=${res.body.token}`);
    expect(new Date(res.body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    const stored = await db.query<{ token_hash: string }>(
      `SELECT token_hash FROM contact_link_tokens WHERE contact_id = $1`,
      {
        bind: [person.id],
        type: QueryTypes.SELECT,
      },
    );
    expect(stored).toHaveLength(1);
    expect(stored[0].token_hash).not.toContain(res.body.token);

    const redeem = (workspaceId: string) =>
      systemCall(app.broker, asWorkspaceId(workspaceId), "contacts.linkChat", {
        token: res.body.token,
        chatId: "4242",
      });
    expect(await redeem("another-workspace")).toBeNull();
    expect(await redeem(ctx.workspaceId)).toMatchObject({
      id: person.id,
      attributes: { chatapp1ChatId: "4242" },
    });
    expect(await redeem(ctx.workspaceId)).toBeNull();
    expect((await client.get(`${ctx.ws}/contacts/nope/chatapp1-link`)).status).toBe(404);
  });
});
