import { database } from "../../../lib/database";
import { SOURCES } from "../../../services/crm/search.repo";
import { crmWorld, insertContact, type CrmWorld } from "./crm-fixtures";

let w: CrmWorld;
beforeAll(async () => {
  w = await crmWorld();
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
      "savedViews.visible",
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
  test("create and list the caller's widgets in layout order", async () => {
    const first = await w.member.client.post(`${w.ws}/dashboard-widgets`, { type: "deals_by_stage" });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      type: "deals_by_stage",
      title: "Deals by stage",
      config: {},
      position: { x: 0, y: 0, w: 12, h: 4 },
    });
    const second = await w.member.client.post(`${w.ws}/dashboard-widgets`, {
      type: "tasks_due",
      title: "My tasks",
      config: { assignee: "me" },
    });
    expect(second.body.position).toEqual({ x: 0, y: 4, w: 12, h: 4 });
    const top = await w.member.client.post(`${w.ws}/dashboard-widgets`, {
      type: "metric",
      position: { x: 0, y: 0, w: 3, h: 2 },
    });
    const list = await w.member.client.get(`${w.ws}/dashboard-widgets`);
    expect(list.status).toBe(200);
    expect(list.body.map((x: { id: string }) => x.id)).toEqual([first.body.id, top.body.id, second.body.id]);
    expect((await w.owner.client.get(`${w.ws}/dashboard-widgets`)).body).toEqual([]);
  });

  test("a widget's references must exist; invalid widgets are 400", async () => {
    const pipelineId = (await w.owner.client.get(`${w.ws}/pipelines`)).body[0].id;
    expect(
      (
        await w.owner.client.post(`${w.ws}/dashboard-widgets`, {
          type: "pipeline_value",
          config: { pipelineId },
        })
      ).status,
    ).toBe(201);
    const foreignPipeline = (await w.other.owner.client.get(`${w.other.ws}/pipelines`)).body[0].id;
    expect(
      (
        await w.owner.client.post(`${w.ws}/dashboard-widgets`, {
          type: "pipeline_value",
          config: { pipelineId: foreignPipeline },
        })
      ).status,
    ).toBe(404);
    const view = (await w.owner.client.post(`${w.ws}/saved-views`, { name: "For widget", resource: "deals" }))
      .body;
    expect(
      (
        await w.owner.client.post(`${w.ws}/dashboard-widgets`, {
          type: "saved_view",
          config: { viewId: view.id },
        })
      ).status,
    ).toBe(201);
    // The member cannot see the owner's private view.
    expect(
      (
        await w.member.client.post(`${w.ws}/dashboard-widgets`, {
          type: "saved_view",
          config: { viewId: view.id },
        })
      ).status,
    ).toBe(404);
    for (const [body, field] of [
      [{}, "type"],
      [{ type: "horoscope" }, "type"],
      [{ type: "saved_view" }, "config.viewId"],
      [{ type: "metric", position: { x: 0, y: 0, w: 20, h: 1 } }, "position.w"],
      [{ type: "metric", config: { pipelineId: 5 } }, "config.pipelineId"],
    ] as const) {
      const res = await w.owner.client.post(`${w.ws}/dashboard-widgets`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect((await w.fullKey.get(`${w.ws}/dashboard-widgets`)).status).toBe(401);
    expect((await w.other.owner.client.post(`${w.ws}/dashboard-widgets`, { type: "metric" })).status).toBe(
      403,
    );
  });
});

describe("activity", () => {
  test("recent CRM changes across the workspace, newest first, without access entries", async () => {
    const company = (await w.owner.client.post(`${w.ws}/companies`, { name: "Activity Co" })).body;
    const deal = (
      await w.member.client.post(`${w.ws}/deals`, { title: "Activity deal", companyId: company.id })
    ).body;
    const stages = (await w.owner.client.get(`${w.ws}/pipelines`)).body[0].stages;
    await w.member.client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: stages[1].id });
    const task = (await w.fullKey.post(`${w.ws}/tasks`, { title: "Activity task" })).body;

    const res = await w.viewer.client.get(`${w.ws}/activity?limit=4`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((a: { type: string }) => a.type)).toEqual([
      "task.created",
      "deal.stage_changed",
      "deal.created",
      "company.created",
    ]);
    expect(res.body.data[0]).toMatchObject({
      actor: { type: "api_key" },
      target: { type: "task", id: task.id },
    });
    expect(res.body.data[1]).toMatchObject({
      actor: { type: "user", id: w.member.id, name: "Mia Member" },
      target: { type: "deal", id: deal.id },
    });
    expect(res.body.pagination.limit).toBe(4);

    const all = await w.owner.client.get(`${w.ws}/activity?limit=100`);
    const types = all.body.data.map((a: { type: string }) => a.type);
    expect(types).not.toContain("api_key.created");
    expect(types).not.toContain("member.added");
    expect(types).not.toContain("workspace.created");

    expect(
      (await w.owner.client.get(`${w.ws}/activity?type=deal.*`)).body.data.map(
        (a: { type: string }) => a.type,
      ),
    ).toEqual(["deal.stage_changed", "deal.created"]);
    expect((await w.owner.client.get(`${w.ws}/activity?type=company.created`)).body.pagination.total).toBe(1);
    expect((await w.owner.client.get(`${w.ws}/activity?targetId=${deal.id}`)).body.pagination.total).toBe(2);
    expect((await w.owner.client.get(`${w.ws}/activity?targetType=task`)).body.pagination.total).toBe(1);
    expect((await w.owner.client.get(`${w.ws}/activity?actorId=${w.member.id}`)).body.pagination.total).toBe(
      2,
    );
    expect((await w.owner.client.get(`${w.ws}/activity?from=2999-01-01`)).body.data).toEqual([]);
    const beyond = await w.owner.client.get(`${w.ws}/activity?page=50`);
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.pagination.total).toBe(all.body.pagination.total);
    expect((await w.owner.client.get(`${w.ws}/activity?from=someday`)).status).toBe(400);
    expect((await w.readKey.get(`${w.ws}/activity`)).status).toBe(200);
    const otherWs = await w.other.owner.client.get(`${w.other.ws}/activity`);
    expect(otherWs.body.data.map((a: { target: { id: string } | null }) => a.target?.id)).not.toContain(
      deal.id,
    );
  });
});

describe("search", () => {
  beforeAll(async () => {
    await insertContact(w.workspaceId, {
      email: "zelda.quark@hyrule.test",
      firstName: "Zelda",
      lastName: "Quark",
    });
    await insertContact(w.workspaceId, { email: "link@hyrule.test", firstName: "Link" });
    await w.owner.client.post(`${w.ws}/companies`, { name: "Quarkonium Labs", domain: "quarkonium.io" });
    await w.owner.client.post(`${w.ws}/deals`, { title: "Quark expansion", value: 1200, currency: "EUR" });
    await insertContact(w.other.workspaceId, { email: "quark@elsewhere.test" });
  });

  test("one query across contacts, companies and deals, best match first", async () => {
    const res = await w.viewer.client.get(`${w.ws}/search?q=quark`);
    expect(res.status).toBe(200);
    expect(res.body.query).toBe("quark");
    expect(res.body.totals).toEqual({ contacts: 1, companies: 1, deals: 1 });
    const byType = Object.fromEntries(res.body.data.map((h: { type: string }) => [h.type, h]));
    expect(byType.contacts).toMatchObject({ title: "Zelda Quark", subtitle: "zelda.quark@hyrule.test" });
    expect(byType.companies).toMatchObject({ title: "Quarkonium Labs", subtitle: "quarkonium.io" });
    expect(byType.deals).toMatchObject({ title: "Quark expansion", subtitle: "1200.00 EUR · open" });
    const scores = res.body.data.map((h: { score: number }) => h.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(res.body.data.map((h: { id: string }) => h.id)).toHaveLength(3);
  });

  test("types and limit narrow it; bad input is 400", async () => {
    const companies = await w.readKey.get(`${w.ws}/search?q=QUARK&types=companies`);
    expect(companies.body.data.map((h: { type: string }) => h.type)).toEqual(["companies"]);
    expect(companies.body.totals).toEqual({ companies: 1 });
    const limited = await w.owner.client.get(`${w.ws}/search?q=hyrule&types=contacts&limit=1`);
    expect(limited.body.data).toHaveLength(1);
    expect(limited.body.totals.contacts).toBe(2);
    expect((await w.owner.client.get(`${w.ws}/search?q=%25`)).body.data).toEqual([]);
    expect((await w.owner.client.get(`${w.ws}/search`)).status).toBe(400);
    const badType = await w.owner.client.get(`${w.ws}/search?q=x&types=contacts,planets`);
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
        const explaining = new Proxy(sequelize, {
          get(target, prop, receiver) {
            if (prop !== "query") return Reflect.get(target, prop, receiver);
            return async (sql: string, options: Record<string, unknown>) => {
              const [rows] = await target.query(
                `EXPLAIN ${sql.replace("workspace_id = $1 AND ", "$1::text IS NOT NULL AND ")}`,
                {
                  ...options,
                  type: undefined,
                  transaction,
                },
              );
              plans.push(...(rows as Array<{ "QUERY PLAN": string }>).map((r) => r["QUERY PLAN"]));
              return [];
            };
          },
        });
        await source.run(explaining, w.workspaceId, "quark", 5);
      });
      expect({ type: source.type, usesIndex: plans.some((line) => /_search\w*_idx/.test(line)) }).toEqual({
        type: source.type,
        usesIndex: true,
      });
    }
  });

  test("a key without contacts.read finds nothing; another workspace sees only its own", async () => {
    const created = await w.owner.client.post(`${w.ws}/keys`, {
      name: "analytics only",
      scopes: ["analytics.read"],
    });
    const key = w.app.http();
    key.bearer = created.body.key;
    const res = await key.get(`${w.ws}/search?q=quark`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ query: "quark", data: [], totals: {} });
    const other = await w.other.owner.client.get(`${w.other.ws}/search?q=quark`);
    expect(other.body.data.map((h: { subtitle: string }) => h.subtitle)).toEqual(["quark@elsewhere.test"]);
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
