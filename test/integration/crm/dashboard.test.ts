import { ANALYTICS_ENDPOINTS } from "../../../lib/analytics";
import * as databaseModule from "../../../lib/database";
import { createSequelize, database } from "../../../lib/database";
import { up as convertWidgets } from "../../../models/migrations/0070-dashboard-widget-kinds";
import { systemCall } from "../../../lib/system-call";
import { SOURCES } from "../../../services/crm/search.repo";
import { createTestDatabase } from "../../helpers/database";
import { ownerWithWorkspace } from "../../helpers/http";
import { crmWorld, insertContact, type CrmWorld } from "./crm-fixtures";
import { asWorkspaceId } from "../../../lib/tenancy";

let w: CrmWorld;
beforeAll(async () => {
  // The activity feed is the events area's; widgets' data the analytics area's.
  w = await crmWorld({ services: ["events", "analytics"] });
});
afterAll(() => w.app.stop());

describe("saved views", () => {
  test("create, list own and shared, update, delete", async () => {
    const created = await w.member.client.post(`${w.ws}/saved-views`, {
      name: "Hot leads",
      resource: "contacts",
      filters: { stage: "lead", tag: "hot" },
      sort: "-score",
      columns: ["email", "score"],
      userId: w.owner.id,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "Hot leads",
      resource: "contacts",
      filters: { stage: "lead", tag: "hot" },
      sort: "-score",
      columns: ["email", "score"],
      shared: false,
      ownerId: w.member.id,
      mine: true,
    });
    const shared = await w.owner.client.post(`${w.ws}/saved-views`, {
      name: "Big deals",
      resource: "deals",
      filters: { minValue: 10000 },
      shared: true,
    });
    expect(shared.status).toBe(201);
    await w.owner.client.post(`${w.ws}/saved-views`, { name: "Private", resource: "deals" });

    const memberList = await w.member.client.get(`${w.ws}/saved-views`);
    expect(memberList.status).toBe(200);
    expect(memberList.body.map((v: { name: string; mine: boolean }) => [v.name, v.mine])).toEqual([
      ["Hot leads", true],
      ["Big deals", false],
    ]);
    expect(
      (await w.member.client.get(`${w.ws}/saved-views?resource=deals`)).body.map(
        (v: { name: string }) => v.name,
      ),
    ).toEqual(["Big deals"]);
    expect(
      (await w.viewer.client.get(`${w.ws}/saved-views`)).body.map((v: { name: string }) => v.name),
    ).toEqual(["Big deals"]);

    const updated = await w.member.client.patch(`${w.ws}/saved-views/${created.body.id}`, {
      name: "Hottest",
      shared: true,
      sort: null,
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: "Hottest",
      shared: true,
      sort: null,
      filters: { stage: "lead", tag: "hot" },
    });

    // Only the owner changes or deletes a view, even a shared one.
    expect(
      (await w.member.client.patch(`${w.ws}/saved-views/${shared.body.id}`, { name: "Mine now" })).status,
    ).toBe(404);
    expect((await w.member.client.delete(`${w.ws}/saved-views/${shared.body.id}`)).status).toBe(404);
    expect(
      (await w.other.owner.client.patch(`${w.other.ws}/saved-views/${created.body.id}`, { name: "x" }))
        .status,
    ).toBe(404);

    const removed = await w.member.client.delete(`${w.ws}/saved-views/${created.body.id}`);
    expect(removed.body).toEqual({ success: true });
    expect((await w.member.client.delete(`${w.ws}/saved-views/${created.body.id}`)).status).toBe(404);
  });

  test("validation: 400 naming the field; duplicate names per user and resource are 409", async () => {
    for (const [body, field] of [
      [{ resource: "contacts" }, "name"],
      [{ name: "x" }, "resource"],
      [{ name: "x", resource: "planets" }, "resource"],
      [{ name: "x", resource: "deals", filters: "stage=lead" }, "filters"],
      [{ name: "x", resource: "deals", columns: "email" }, "columns"],
    ] as const) {
      const res = await w.owner.client.post(`${w.ws}/saved-views`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    await w.owner.client.post(`${w.ws}/saved-views`, { name: "Dup", resource: "companies" });
    expect(
      (await w.owner.client.post(`${w.ws}/saved-views`, { name: "dup", resource: "companies" })).status,
    ).toBe(409);
    expect(
      (await w.member.client.post(`${w.ws}/saved-views`, { name: "Dup", resource: "companies" })).status,
    ).toBe(201);
    expect(
      (await w.owner.client.post(`${w.ws}/saved-views`, { name: "Dup", resource: "tasks" })).status,
    ).toBe(201);
  });

  test("saved views need a session; a VIEWER keeps views of their own", async () => {
    expect((await w.fullKey.get(`${w.ws}/saved-views`)).status).toBe(401);
    expect((await w.fullKey.post(`${w.ws}/saved-views`, { name: "k", resource: "deals" })).status).toBe(401);
    expect(
      (await w.viewer.client.post(`${w.ws}/saved-views`, { name: "Viewer's", resource: "deals" })).status,
    ).toBe(201);
    expect((await w.other.owner.client.get(`${w.ws}/saved-views`)).status).toBe(403);
  });
});

describe("saved views through moleculer-db's adapter", () => {
  test("moleculer-db's generated actions are off, and the workspace scope keeps workspaces apart", async () => {
    const names = w.app.broker.registry.getActionList({}).map((a: { name: string }) => a.name);
    expect(names.filter((n: string) => n.startsWith("savedViews.")).sort()).toEqual([
      "savedViews.create",
      "savedViews.list",
      "savedViews.remove",
      "savedViews.update",
    ]);
    const shared = await w.owner.client.post(`${w.ws}/saved-views`, {
      name: "Everyone's",
      resource: "segments",
      shared: true,
    });
    expect(shared.status).toBe(201);
    const elsewhere = await w.other.owner.client.post(`${w.other.ws}/saved-views`, {
      name: "Everyone's",
      resource: "segments",
      shared: true,
    });
    expect(elsewhere.status).toBe(201);
    const otherList = (await w.other.owner.client.get(`${w.other.ws}/saved-views?resource=segments`)).body;
    expect(otherList.map((v: { id: string }) => v.id)).toEqual([elsewhere.body.id]);
    expect((await w.other.owner.client.delete(`${w.other.ws}/saved-views/${shared.body.id}`)).status).toBe(
      404,
    );
    expect((await w.owner.client.get(`${w.ws}/saved-views?resource=segments`)).body).toEqual([
      expect.objectContaining({ id: shared.body.id, mine: true, ownerId: expect.any(String) }),
    ]);
  });
});

describe("dashboard widgets", () => {
  const widget = (fields: Record<string, unknown> = {}) => ({
    title: "Sends",
    kind: "timeseries",
    endpoint: "timeseries",
    params: { metric: "sent", granularity: "day" },
    ...fields,
  });

  test("the caller's own widgets: created (201), listed by position, changed and removed", async () => {
    const first = await w.member.client.post(`${w.ws}/dashboard-widgets`, widget());
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.any(String),
      title: "Sends",
      kind: "timeseries",
      endpoint: "timeseries",
      params: { metric: "sent", granularity: "day" },
      position: { x: 0, y: 0, w: 12, h: 4 },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const second = await w.member.client.post(
      `${w.ws}/dashboard-widgets`,
      widget({ title: "Funnel", kind: "funnel", endpoint: "funnel", params: { steps: "a,b" } }),
    );
    expect(second.body.position).toEqual({ x: 0, y: 4, w: 12, h: 4 });
    const top = await w.member.client.post(
      `${w.ws}/dashboard-widgets`,
      widget({
        title: "Contacts",
        kind: "metric",
        endpoint: "overview",
        params: undefined,
        position: { x: 6, y: 0, w: 3, h: 2 },
      }),
    );
    expect(top.body.params).toEqual({});
    const list = await w.member.client.get(`${w.ws}/dashboard-widgets`);
    expect(list.status).toBe(200);
    expect(list.body.map((x: { id: string }) => x.id)).toEqual([first.body.id, top.body.id, second.body.id]);
    expect((await w.owner.client.get(`${w.ws}/dashboard-widgets`)).body).toEqual([]);

    const moved = await w.member.client.patch(`${w.ws}/dashboard-widgets/${second.body.id}`, {
      title: "Signup funnel",
      position: { x: 3, y: 0, w: 3, h: 3 },
    });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      title: "Signup funnel",
      kind: "funnel",
      endpoint: "funnel",
      params: { steps: "a,b" },
      position: { x: 3, y: 0, w: 3, h: 3 },
    });
    expect(
      (await w.member.client.get(`${w.ws}/dashboard-widgets`)).body.map((x: { id: string }) => x.id),
    ).toEqual([first.body.id, second.body.id, top.body.id]);

    // Another member's widget, or one in another workspace, is not found.
    expect(
      (await w.owner.client.patch(`${w.ws}/dashboard-widgets/${first.body.id}`, { title: "x" })).status,
    ).toBe(404);
    expect((await w.owner.client.delete(`${w.ws}/dashboard-widgets/${first.body.id}`)).status).toBe(404);
    expect(
      (await w.other.owner.client.delete(`${w.other.ws}/dashboard-widgets/${first.body.id}`)).status,
    ).toBe(404);

    const removed = await w.member.client.delete(`${w.ws}/dashboard-widgets/${top.body.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true });
    expect((await w.member.client.delete(`${w.ws}/dashboard-widgets/${top.body.id}`)).status).toBe(404);
    expect(
      (await w.member.client.get(`${w.ws}/dashboard-widgets`)).body.map((x: { id: string }) => x.id),
    ).toEqual([first.body.id, second.body.id]);
  });

  test("every analytics name is an endpoint; an unknown endpoint and other invalid widgets are 400 naming the field", async () => {
    for (const endpoint of ANALYTICS_ENDPOINTS)
      expect((await w.viewer.client.post(`${w.ws}/dashboard-widgets`, widget({ endpoint }))).status).toBe(
        201,
      );
    const existing = (await w.viewer.client.get(`${w.ws}/dashboard-widgets`)).body[0];
    for (const [body, field] of [
      [widget({ endpoint: "horoscope" }), "endpoint"],
      [widget({ endpoint: undefined }), "endpoint"],
      [widget({ kind: "pie" }), "kind"],
      [widget({ title: undefined }), "title"],
      [widget({ params: "metric=sent" }), "params"],
      [widget({ position: { x: 0, y: 0, w: 20, h: 1 } }), "position.w"],
    ] as const) {
      const res = await w.owner.client.post(`${w.ws}/dashboard-widgets`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    const badPatch = await w.viewer.client.patch(`${w.ws}/dashboard-widgets/${existing.id}`, {
      endpoint: "horoscope",
    });
    expect(badPatch.status).toBe(400);
    expect(badPatch.body.details.map((d: { field: string }) => d.field)).toEqual(["endpoint"]);
    expect((await w.fullKey.get(`${w.ws}/dashboard-widgets`)).status).toBe(401);
    expect((await w.other.owner.client.post(`${w.ws}/dashboard-widgets`, widget())).status).toBe(403);
  });

  test("?data=true adds each widget's analytics answer, or the error its params now get, in the caller's workspace", async () => {
    const { owner, ws, workspaceId } = await ownerWithWorkspace(w.app.baseUrl);
    for (const timestamp of ["2026-06-01T10:00:00Z", "2026-06-02T10:00:00Z"])
      await systemCall(w.app.broker, workspaceId, "events.record", { type: "page_view", timestamp });
    const range = { from: "2026-06-01", to: "2026-06-02", timezone: "UTC" };
    const add = async (fields: Record<string, unknown>, y: number) => {
      const res = await owner.client.post(
        `${ws}/dashboard-widgets`,
        widget({ ...fields, position: { x: 0, y, w: 6, h: 2 } }),
      );
      expect(res.status).toBe(201);
      return res.body;
    };
    // Another workspace named in the params does not move the query out of the caller's.
    const series = await add({ params: { ...range, metric: "events", workspaceId: w.workspaceId } }, 0);
    const overview = await add({ kind: "metric", endpoint: "overview", params: range }, 1);
    const badMetric = await add({ params: { ...range, metric: "nope" } }, 2);
    const noCampaign = await add({ kind: "table", endpoint: "campaigns", params: range }, 3);

    const plain = await owner.client.get(`${ws}/dashboard-widgets`);
    expect(plain.body.map((x: Record<string, unknown>) => "result" in x)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    const res = await owner.client.get(`${ws}/dashboard-widgets?data=true`);
    expect(res.status).toBe(200);
    expect(res.body.map((x: { id: string }) => x.id)).toEqual([
      series.id,
      overview.id,
      badMetric.id,
      noCampaign.id,
    ]);
    const [seriesData, overviewData, badData, campaignData] = res.body;
    const direct = await owner.client.get(
      `${ws}/analytics/timeseries?metric=events&from=2026-06-01&to=2026-06-02&timezone=UTC`,
    );
    expect(seriesData).toEqual({ ...series, result: direct.body, error: null });
    expect(seriesData.result.points.map((p: { value: number }) => p.value)).toEqual([1, 1]);
    expect(overviewData.result.events).toBe(2);
    expect(overviewData.error).toBeNull();
    expect(badData.result).toBeNull();
    expect(badData.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "metric" }] });
    expect(campaignData.result).toBeNull();
    expect(campaignData.error.details.map((d: { field: string }) => d.field)).toContain("campaignId");
  });

  test("the migration turns CRM widgets into analytics widgets, keeping title, position and config", async () => {
    const scratch = await createTestDatabase();
    const sequelize = createSequelize(scratch.url);
    try {
      // The table as it was before the migration, with one widget of each kind it knew.
      await sequelize.query(`
        DROP TABLE dashboard_widgets;
        CREATE TABLE dashboard_widgets (
          id text PRIMARY KEY, workspace_id text NOT NULL, user_id text NOT NULL, type text NOT NULL,
          title text NOT NULL, config jsonb NOT NULL DEFAULT '{}'::jsonb, position jsonb NOT NULL DEFAULT '{}'::jsonb,
          created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
        CREATE INDEX dashboard_widgets_user_idx ON dashboard_widgets (workspace_id, user_id, created_at);
        INSERT INTO dashboard_widgets (id, workspace_id, user_id, type, title, config, position) VALUES
          ('w1', 'ws', 'u', 'contacts_growth', 'Growth', '{"days": 30}', '{"x": 0, "y": 0, "w": 6, "h": 4}'),
          ('w2', 'ws', 'u', 'deals_by_stage', 'Stages', '{"pipelineId": "p1"}', '{"x": 6, "y": 0, "w": 6, "h": 4}'),
          ('w3', 'ws', 'u', 'recent_activity', 'Recent', '{}', '{"x": 0, "y": 4, "w": 12, "h": 4}'),
          ('w4', 'ws', 'u', 'contacts_total', 'Contacts', '{}', '{"x": 0, "y": 8, "w": 3, "h": 2}'),
          ('w5', 'ws', 'u', 'pipeline_value', 'Pipeline', '{}', '{"x": 3, "y": 8, "w": 3, "h": 2}');
      `);
      await convertWidgets(sequelize);
      const [rows] = await sequelize.query(
        "SELECT id, title, kind, endpoint, params, position FROM dashboard_widgets ORDER BY id",
      );
      expect(rows).toEqual([
        {
          id: "w1",
          title: "Growth",
          kind: "timeseries",
          endpoint: "timeseries",
          params: { metric: "contacts", days: 30 },
          position: { x: 0, y: 0, w: 6, h: 4 },
        },
        {
          id: "w2",
          title: "Stages",
          kind: "funnel",
          endpoint: "funnel",
          params: { pipelineId: "p1" },
          position: { x: 6, y: 0, w: 6, h: 4 },
        },
        {
          id: "w3",
          title: "Recent",
          kind: "table",
          endpoint: "activity",
          params: {},
          position: { x: 0, y: 4, w: 12, h: 4 },
        },
        {
          id: "w4",
          title: "Contacts",
          kind: "metric",
          endpoint: "overview",
          params: {},
          position: { x: 0, y: 8, w: 3, h: 2 },
        },
        {
          id: "w5",
          title: "Pipeline",
          kind: "metric",
          endpoint: "revenue",
          params: {},
          position: { x: 3, y: 8, w: 3, h: 2 },
        },
      ]);
    } finally {
      await sequelize.close();
      await scratch.drop();
    }
  });
});

describe("activity", () => {
  test("the recorded-activity feed: events newest first with their contact, filtered by type, contact and time", async () => {
    const ana = await insertContact(w.workspaceId, {
      email: "ana@feed.test",
      firstName: "Ana",
      lastName: "Lima",
    });
    const bo = await insertContact(w.workspaceId, { email: "bo@feed.test" });
    const record = async (body: Record<string, unknown>) => {
      const res = await w.owner.client.post(`${w.ws}/events`, body);
      expect(res.status).toBe(201);
      return res.body as { id: string; timestamp: string };
    };
    const viewed = await record({ type: "page_view", contactId: ana, metadata: { title: "Pricing" } });
    const bought = await record({ type: "purchase", contactId: ana, metadata: { amount: 42 } });
    const anonymous = await record({ type: "page_view", metadata: { title: "Home" } });
    const boViewed = await record({ type: "page_view", contactId: bo });
    // An audit entry (a CRM write) is not activity.
    await w.owner.client.post(`${w.ws}/companies`, { name: "Not activity" });

    const res = await w.viewer.client.get(`${w.ws}/activity?limit=3`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((a: { id: string }) => a.id)).toEqual([boViewed.id, anonymous.id, bought.id]);
    expect(res.body.pagination).toMatchObject({ limit: 3, total: 4 });
    expect(res.body.data[1]).toEqual({
      id: anonymous.id,
      type: "page_view",
      contactId: null,
      contact: null,
      metadata: { title: "Home" },
      occurredAt: anonymous.timestamp,
    });
    expect(res.body.data[2]).toEqual({
      id: bought.id,
      type: "purchase",
      contactId: ana,
      contact: { id: ana, email: "ana@feed.test", firstName: "Ana", lastName: "Lima" },
      metadata: { amount: 42 },
      occurredAt: bought.timestamp,
    });

    const ids = async (query: string) =>
      (await w.readKey.get(`${w.ws}/activity?${query}`)).body.data.map((a: { id: string }) => a.id);
    expect(await ids(`contactId=${ana}`)).toEqual([bought.id, viewed.id]);
    expect(await ids("type=page_view")).toEqual([boViewed.id, anonymous.id, viewed.id]);
    expect(await ids(`type=page_view&contactId=${ana}`)).toEqual([viewed.id]);
    expect(await ids("from=2999-01-01")).toEqual([]);
    expect(await ids(`to=${encodeURIComponent(viewed.timestamp)}`)).toEqual([viewed.id]);
    expect(await ids(`from=${encodeURIComponent(boViewed.timestamp)}`)).toEqual([boViewed.id]);
    const beyond = await w.owner.client.get(`${w.ws}/activity?page=50`);
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.pagination.total).toBe(4);
    expect((await w.owner.client.get(`${w.ws}/activity?from=someday`)).status).toBe(400);
    const otherWs = await w.other.owner.client.get(`${w.other.ws}/activity`);
    expect(otherWs.body.data).toEqual([]);
    expect((await w.other.owner.client.get(`${w.ws}/activity`)).status).toBe(403);
  });

  test("the audit log stays at audit-logs", async () => {
    const res = await w.owner.client.get(`${w.ws}/audit-logs?action=company.created`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
  });
});

describe("search", () => {
  const sqlInsert = async (sql: string, bind: unknown[]) => (await database()).query(sql, { bind });
  beforeAll(async () => {
    await insertContact(w.workspaceId, {
      email: "zelda.quark@hyrule.test",
      firstName: "Zelda",
      lastName: "Quark",
    });
    await insertContact(w.workspaceId, { email: "link@hyrule.test", firstName: "Link" });
    await insertContact(w.workspaceId, { email: "quark@hyrule.test", firstName: "Quinn" });
    await w.owner.client.post(`${w.ws}/companies`, { name: "Quarkonium Labs", domain: "quarkonium.io" });
    await w.owner.client.post(`${w.ws}/deals`, {
      title: "Big Quark expansion",
      value: 1200,
      currency: "EUR",
    });
    await sqlInsert(
      `INSERT INTO campaigns (id, workspace_id, name, type, workflow) VALUES ($1, $2, 'Quark welcome', 'workflow', '{}')`,
      [`cp_${w.workspaceId}`, w.workspaceId],
    );
    await sqlInsert(
      `INSERT INTO templates (id, workspace_id, name, channel, locale, content) VALUES ($1, $2, 'The quark letter', 'email', 'en', '{}')`,
      [`tp_${w.workspaceId}`, w.workspaceId],
    );
    await sqlInsert(
      `INSERT INTO segments (id, workspace_id, name, type) VALUES ($1, $2, 'Quark fans', 'static')`,
      [`sg_${w.workspaceId}`, w.workspaceId],
    );
    await sqlInsert(
      `INSERT INTO forms (id, workspace_id, name, fields, settings) VALUES ($1, $2, 'Quark signup', '[]', '{}')`,
      [`fm_${w.workspaceId}`, w.workspaceId],
    );
    for (let i = 0; i < 12; i++) await insertContact(w.workspaceId, { email: `many${i}@crowd.test` });
    await insertContact(w.other.workspaceId, { email: "quark@elsewhere.test" });
  });

  test("one query across every kind of record, prefix matches first, case-insensitive", async () => {
    const res = await w.owner.client.get(`${w.ws}/search?q=QUARK`);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { type: "contact", id: expect.any(String), title: "Quinn", subtitle: "quark@hyrule.test" },
      { type: "contact", id: expect.any(String), title: "Zelda Quark", subtitle: "zelda.quark@hyrule.test" },
      { type: "company", id: expect.any(String), title: "Quarkonium Labs", subtitle: "quarkonium.io" },
      { type: "deal", id: expect.any(String), title: "Big Quark expansion", subtitle: "1200.00 EUR · open" },
      { type: "campaign", id: `cp_${w.workspaceId}`, title: "Quark welcome", subtitle: "workflow · draft" },
      { type: "template", id: `tp_${w.workspaceId}`, title: "The quark letter", subtitle: "email" },
      { type: "segment", id: `sg_${w.workspaceId}`, title: "Quark fans", subtitle: "static" },
      { type: "form", id: `fm_${w.workspaceId}`, title: "Quark signup", subtitle: "active" },
    ]);
    // Contacts by name and by the start of their last name.
    const byName = await w.owner.client.get(`${w.ws}/search?q=zel&types=contact`);
    expect(byName.body.results.map((h: { title: string }) => h.title)).toEqual(["Zelda Quark"]);
  });

  test("types narrows it, at most 10 per type; q under 2 characters or an unknown type is 400", async () => {
    const companies = await w.readKey.get(`${w.ws}/search?q=quark&types=company,deal`);
    expect(companies.body.results.map((h: { type: string }) => h.type)).toEqual(["company", "deal"]);
    const crowd = await w.owner.client.get(`${w.ws}/search?q=crowd&types=contact`);
    expect(crowd.body.results).toHaveLength(10);
    expect((await w.owner.client.get(`${w.ws}/search?q=%25%25`)).body.results).toEqual([]);
    for (const query of ["", "q=", "q=a", "q=%20a%20"]) {
      const res = await w.owner.client.get(`${w.ws}/search?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.details[0].field).toBe("q");
    }
    const badType = await w.owner.client.get(`${w.ws}/search?q=xy&types=contact,planets`);
    expect(badType.status).toBe(400);
    expect(badType.body.details[0].field).toBe("types");
  });

  test("each search source's query can be served by its trigram index", async () => {
    const sequelize = await database();
    for (const source of SOURCES) {
      const plans: string[] = [];
      await sequelize.transaction(async (transaction) => {
        await sequelize.query("SET LOCAL enable_seqscan = off", { transaction });
        // Run the source's SQL through EXPLAIN, text predicate alone (on a tiny table the
        // planner would rather take any workspace index, which says nothing about the text one).
        const explaining = jest
          .spyOn(databaseModule, "query")
          .mockImplementation(async (ws, sql, binds = []) => {
            const [rows] = await sequelize.query(
              `EXPLAIN ${sql.replace("workspace_id = $1 AND ", "$1::text IS NOT NULL AND ")}`,
              { bind: [ws, ...binds], transaction },
            );
            plans.push(...(rows as Array<{ "QUERY PLAN": string }>).map((r) => r["QUERY PLAN"]));
            return [];
          });
        try {
          await source.run(asWorkspaceId(w.workspaceId), "quark");
        } finally {
          explaining.mockRestore();
        }
      });
      expect({ type: source.type, usesIndex: plans.some((line) => /_search\w*_idx/.test(line)) }).toEqual({
        type: source.type,
        usesIndex: true,
      });
    }
  });

  test("each kind needs its read permission; another workspace sees only its own", async () => {
    const created = await w.owner.client.post(`${w.ws}/keys`, {
      name: "templates only",
      scopes: ["templates.read"],
    });
    const key = w.app.http();
    key.bearer = created.body.key;
    const res = await key.get(`${w.ws}/search?q=quark`);
    expect(res.status).toBe(200);
    expect(res.body.results.map((h: { type: string }) => h.type)).toEqual(["template"]);
    const other = await w.other.owner.client.get(`${w.other.ws}/search?q=quark`);
    expect(other.body.results.map((h: { subtitle: string }) => h.subtitle)).toEqual(["quark@elsewhere.test"]);
    expect((await w.other.owner.client.get(`${w.ws}/search?q=quark`)).status).toBe(403);
  });
});

test("every CRM route is in the OpenAPI description with its access rule and response shape", async () => {
  const doc = (await w.app.http().get("/api/openapi")).body;
  const base = "/api/workspaces/{workspaceId}";
  const routes: Array<[string, string, string | undefined, string]> = [
    ["get", "/companies", "contacts.read", "200"],
    ["post", "/companies", "contacts.write", "201"],
    ["patch", "/companies/{companyId}", "contacts.write", "200"],
    ["delete", "/companies/{companyId}", "contacts.delete", "200"],
    ["get", "/pipelines", "contacts.read", "200"],
    ["post", "/pipelines", "contacts.write", "201"],
    ["get", "/pipelines/{pipelineId}", "contacts.read", "200"],
    ["patch", "/pipelines/{pipelineId}", "contacts.write", "200"],
    ["delete", "/pipelines/{pipelineId}", "contacts.delete", "200"],
    ["get", "/deals", "contacts.read", "200"],
    ["post", "/deals", "contacts.write", "201"],
    ["get", "/deals/stats", "contacts.read", "200"],
    ["get", "/deals/{dealId}", "contacts.read", "200"],
    ["patch", "/deals/{dealId}", "contacts.write", "200"],
    ["patch", "/deals/{dealId}/stage", "contacts.write", "200"],
    ["delete", "/deals/{dealId}", "contacts.delete", "200"],
    ["get", "/tasks", "contacts.read", "200"],
    ["post", "/tasks", "contacts.write", "201"],
    ["get", "/tasks/{taskId}", "contacts.read", "200"],
    ["patch", "/tasks/{taskId}", "contacts.write", "200"],
    ["patch", "/tasks/{taskId}/complete", "contacts.write", "200"],
    ["delete", "/tasks/{taskId}", "contacts.delete", "200"],
    ["get", "/notifications", undefined, "200"],
    ["patch", "/notifications/{notificationId}", undefined, "200"],
    ["delete", "/notifications/{notificationId}", undefined, "200"],
    ["patch", "/notifications/mark-all-read", undefined, "200"],
    ["get", "/saved-views", undefined, "200"],
    ["post", "/saved-views", undefined, "201"],
    ["patch", "/saved-views/{viewId}", undefined, "200"],
    ["delete", "/saved-views/{viewId}", undefined, "200"],
    ["get", "/activity", "contacts.read", "200"],
    ["get", "/dashboard-widgets", undefined, "200"],
    ["post", "/dashboard-widgets", undefined, "201"],
    ["patch", "/dashboard-widgets/{widgetId}", undefined, "200"],
    ["delete", "/dashboard-widgets/{widgetId}", undefined, "200"],
    ["get", "/search", undefined, "200"],
  ];
  /** A named component's schema in place of its `$ref`. */
  const resolve = (schema: any) =>
    schema?.$ref ? doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema;
  for (const [method, path, permission, status] of routes) {
    const op = doc.paths[`${base}${path}`]?.[method];
    expect({ method, path, found: Boolean(op) }).toEqual({ method, path, found: true });
    expect({ path, permission: op["x-permission"] }).toEqual({ path, permission });
    const schema = resolve(op.responses[status]?.content?.["application/json"]?.schema);
    expect({ path, method, type: schema?.type ?? null }).toEqual({
      path,
      method,
      type: expect.stringMatching(/^(object|array)$/),
    });
  }
  expect(doc.paths[`${base}/notifications`].get.security).toEqual([{ sessionCookie: [] }]);
  const dealBody = doc.paths[`${base}/deals`].post.requestBody.content["application/json"].schema;
  expect(dealBody.properties.currency.pattern).toBe("^[A-Z]{3}$");
  expect(
    resolve(doc.paths[`${base}/deals/{dealId}`].get.responses["200"].content["application/json"].schema)
      .properties.stageHistory.type,
  ).toBe("array");
});

// Last: the analytics service is taken away and brought back.
test("?data=true without analytics: each widget's error says it is not deployed; analytics gone (an outage): 503", async () => {
  const posted = { title: "Events", kind: "metric", endpoint: "overview", params: {} };
  const bare = await crmWorld();
  try {
    expect((await bare.owner.client.post(`${bare.ws}/dashboard-widgets`, posted)).status).toBe(201);
    const res = await bare.owner.client.get(`${bare.ws}/dashboard-widgets?data=true`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      expect.objectContaining({
        result: null,
        error: { error: "Analytics is not deployed", code: "SERVICE_UNAVAILABLE" },
      }),
    ]);
  } finally {
    await bare.app.stop();
  }

  expect((await w.owner.client.post(`${w.ws}/dashboard-widgets`, posted)).status).toBe(201);
  await w.app.broker.destroyService(w.app.broker.getLocalService("analytics")!);
  try {
    const during = await w.owner.client.get(`${w.ws}/dashboard-widgets?data=true`);
    expect(during.status).toBe(503);
    expect(during.body.code).toBe("SERVICE_UNAVAILABLE");
  } finally {
    const schema = (await import("../../../services/analytics/analytics.service")).default;
    w.app.broker.createService(schema as unknown as Parameters<typeof w.app.broker.createService>[0]);
    await w.app.broker.waitForServices(["analytics"], 10_000);
  }
  expect((await w.owner.client.get(`${w.ws}/dashboard-widgets?data=true`)).status).toBe(200);
});
