import { database } from "../../../lib/database";
import { crmWorld, insertContact, type CrmWorld } from "./crm-fixtures";

let w: CrmWorld;
beforeAll(async () => {
  w = await crmWorld({ services: ["contacts"] });
});
afterAll(() => w.app.stop());

interface Stage {
  id: string;
  name: string;
  won: boolean;
  lost: boolean;
  probability: number | null;
  position: number;
}

const STAGES = [
  { name: "New", probability: 10 },
  { name: "Demo", probability: 40 },
  { name: "Won", won: true },
  { name: "Lost", lost: true },
];

async function pipeline(name: string) {
  const res = await w.owner.client.post(`${w.ws}/pipelines`, { name, stages: STAGES });
  expect(res.status).toBe(201);
  return res.body as { id: string; stages: Stage[] };
}

describe("pipelines", () => {
  test("a workspace starts with a default sales pipeline", async () => {
    const res = await w.viewer.client.get(`${w.ws}/pipelines`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(res.body[0]).toMatchObject({ name: "Sales pipeline", isDefault: true });
    expect(res.body[0].stages.map((s: Stage) => s.name)).toEqual([
      "Lead",
      "Qualified",
      "Proposal",
      "Negotiation",
      "Closed won",
      "Closed lost",
    ]);
    expect(res.body[0].stages[4]).toMatchObject({ won: true, lost: false, probability: 100, position: 4 });
    // Listing again does not make a second one.
    expect((await w.owner.client.get(`${w.ws}/pipelines`)).body).toHaveLength(1);
  });

  test("create, get, update stages keeping ids, make default, delete", async () => {
    const created = await pipeline("Partners");
    expect(created).toMatchObject({ name: "Partners", isDefault: false });
    expect(created.stages.map((s) => [s.name, s.probability, s.won, s.lost])).toEqual([
      ["New", 10, false, false],
      ["Demo", 40, false, false],
      ["Won", 100, true, false],
      ["Lost", 0, false, true],
    ]);
    const got = await w.readKey.get(`${w.ws}/pipelines/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.stages).toEqual(created.stages);

    const [n, d, won, lost] = created.stages;
    const updated = await w.member.client.patch(`${w.ws}/pipelines/${created.id}`, {
      name: "Partner deals",
      stages: [
        { id: d.id, name: "Demo done" },
        { id: n.id, name: "New" },
        { name: "Contract", probability: 80 },
        { id: won.id, name: "Won", won: true },
        { id: lost.id, name: "Lost", lost: true },
      ],
      isDefault: true,
    });
    expect(updated.status).toBe(200);
    expect(updated.body.name).toBe("Partner deals");
    expect(updated.body.isDefault).toBe(true);
    expect(updated.body.stages.map((s: Stage) => s.name)).toEqual([
      "Demo done",
      "New",
      "Contract",
      "Won",
      "Lost",
    ]);
    expect(updated.body.stages[0].id).toBe(d.id);
    expect(updated.body.stages[2].id).toEqual(expect.any(String));
    const list = await w.owner.client.get(`${w.ws}/pipelines`);
    expect(
      list.body.filter((p: { isDefault: boolean }) => p.isDefault).map((p: { id: string }) => p.id),
    ).toEqual([created.id]);

    // Make the sales pipeline the default again, then delete this one.
    const sales = list.body.find((p: { name: string }) => p.name === "Sales pipeline");
    expect(
      (await w.owner.client.patch(`${w.ws}/pipelines/${sales.id}`, { isDefault: true })).body.isDefault,
    ).toBe(true);
    const removed = await w.member.client.delete(`${w.ws}/pipelines/${created.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true });
    expect((await w.owner.client.get(`${w.ws}/pipelines/${created.id}`)).status).toBe(404);
  });

  test("invalid pipelines are 400 naming the field; names are unique", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ stages: STAGES }, "name"],
      [{ name: "P" }, "stages"],
      [{ name: "P", stages: [] }, "stages"],
      [{ name: "P", stages: [{ probability: 5 }] }, "stages[0].name"],
      [{ name: "P", stages: [{ name: "A" }, { name: "a" }] }, "stages[1].name"],
      [{ name: "P", stages: [{ name: "A", won: true, lost: true }] }, "stages[0].won"],
      [{ name: "P", stages: [{ name: "A", probability: 120 }] }, "stages[0].probability"],
      [{ name: "P", stages: [{ name: "A", id: "made-up" }] }, "stages[0].id"],
    ];
    for (const [body, field] of cases) {
      const res = await w.owner.client.post(`${w.ws}/pipelines`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    await pipeline("Unique name");
    expect(
      (await w.owner.client.post(`${w.ws}/pipelines`, { name: "unique NAME", stages: STAGES })).status,
    ).toBe(409);
    const sales = (await w.owner.client.get(`${w.ws}/pipelines`)).body[0];
    expect((await w.owner.client.patch(`${w.ws}/pipelines/${sales.id}`, { isDefault: false })).status).toBe(
      400,
    );
  });

  test("a pipeline or stage that holds deals cannot be removed (409); flag changes update deal status", async () => {
    const p = await pipeline("Guarded pipeline");
    const deal = await w.owner.client.post(`${w.ws}/deals`, {
      title: "Held",
      pipelineId: p.id,
      stageId: p.stages[1].id,
    });
    expect(deal.status).toBe(201);
    expect((await w.owner.client.delete(`${w.ws}/pipelines/${p.id}`)).status).toBe(409);
    const dropStage = await w.owner.client.patch(`${w.ws}/pipelines/${p.id}`, {
      stages: p.stages
        .filter((s) => s.id !== p.stages[1].id)
        .map(({ id, name, won, lost }) => ({ id, name, won, lost })),
    });
    expect(dropStage.status).toBe(409);
    expect(dropStage.body.error).toContain("Demo");
    // Turning the deal's stage into a won stage closes the deal.
    const flagged = await w.owner.client.patch(`${w.ws}/pipelines/${p.id}`, {
      stages: p.stages.map(({ id, name }, i) => ({ id, name, won: i === 1 })),
    });
    expect(flagged.status).toBe(200);
    const after = await w.owner.client.get(`${w.ws}/deals/${deal.body.id}`);
    expect(after.body).toMatchObject({ status: "won", closedAt: expect.any(String) });
    expect((await w.owner.client.delete(`${w.ws}/deals/${deal.body.id}`)).status).toBe(200);
    expect((await w.owner.client.delete(`${w.ws}/pipelines/${p.id}`)).status).toBe(200);
  });

  test("scopes, roles and workspaces", async () => {
    const p = await pipeline("Scoped");
    for (const client of [w.viewer.client, w.readKey]) {
      expect((await client.get(`${w.ws}/pipelines/${p.id}`)).status).toBe(200);
      expect((await client.post(`${w.ws}/pipelines`, { name: "No", stages: STAGES })).status).toBe(403);
      expect((await client.patch(`${w.ws}/pipelines/${p.id}`, { name: "No" })).status).toBe(403);
      expect((await client.delete(`${w.ws}/pipelines/${p.id}`)).status).toBe(403);
    }
    expect((await w.other.owner.client.get(`${w.other.ws}/pipelines/${p.id}`)).status).toBe(404);
    expect((await w.other.owner.client.patch(`${w.other.ws}/pipelines/${p.id}`, { name: "x" })).status).toBe(
      404,
    );
    expect((await w.other.owner.client.delete(`${w.other.ws}/pipelines/${p.id}`)).status).toBe(404);
  });
});

describe("deals", () => {
  let partners: { id: string; stages: Stage[] };
  let contactId: string;
  let companyId: string;
  beforeAll(async () => {
    partners = await pipeline("Deals suite");
    contactId = await insertContact(w.workspaceId, { email: "buyer@example.test" });
    companyId = (await w.owner.client.post(`${w.ws}/companies`, { name: "Buyer Inc" })).body.id;
  });

  test("create with defaults lands in the first stage of the default pipeline, owned by the caller", async () => {
    const res = await w.member.client.post(`${w.ws}/deals`, { title: "Starter deal" });
    expect(res.status).toBe(201);
    const sales = (await w.owner.client.get(`${w.ws}/pipelines`)).body.find(
      (p: { isDefault: boolean }) => p.isDefault,
    );
    expect(res.body).toMatchObject({
      title: "Starter deal",
      value: 0,
      currency: "USD",
      pipelineId: sales.id,
      stageId: sales.stages[0].id,
      status: "open",
      ownerId: w.member.id,
      createdBy: w.member.id,
      closedAt: null,
      tags: [],
      attributes: {},
    });
  });

  test("create with every field; get shows the stage history", async () => {
    const res = await w.owner.client.post(`${w.ws}/deals`, {
      title: "Big one",
      value: 12000.5,
      currency: "eur",
      pipelineId: partners.id,
      stageId: partners.stages[1].id,
      contactId,
      companyId,
      ownerId: w.member.id,
      expectedCloseDate: "2026-12-31",
      description: "Enterprise licence",
      tags: ["q4"],
      attributes: { source: "referral" },
      status: "won",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      value: 12000.5,
      currency: "EUR",
      stageId: partners.stages[1].id,
      status: "open",
      contactId,
      companyId,
      ownerId: w.member.id,
      expectedCloseDate: "2026-12-31",
    });
    const got = await w.readKey.get(`${w.ws}/deals/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.stageHistory).toEqual([
      expect.objectContaining({
        fromStageId: null,
        toStageId: partners.stages[1].id,
        fromStatus: null,
        toStatus: "open",
        changedBy: w.owner.id,
      }),
    ]);
  });

  test("a deal created in a won stage is closed at once", async () => {
    const res = await w.owner.client.post(`${w.ws}/deals`, {
      title: "Signed",
      pipelineId: partners.id,
      stageId: partners.stages[2].id,
      value: 5,
    });
    expect(res.body).toMatchObject({ status: "won", closedAt: expect.any(String) });
  });

  test("invalid deals are 400 naming the field", async () => {
    const sales = (await w.owner.client.get(`${w.ws}/pipelines`)).body.find(
      (p: { isDefault: boolean }) => p.isDefault,
    );
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, "title"],
      [{ title: "x", value: -1 }, "value"],
      [{ title: "x", value: "ten" }, "value"],
      [{ title: "x", currency: "dollars" }, "currency"],
      [{ title: "x", expectedCloseDate: "31/12/2026" }, "expectedCloseDate"],
      [{ title: "x", expectedCloseDate: "2026-02-30" }, "expectedCloseDate"],
      [{ title: "x", ownerId: w.other.owner.id }, "ownerId"],
      [{ title: "x", pipelineId: partners.id, stageId: sales.stages[0].id }, "stageId"],
      [{ title: "x", tags: [1] }, "tags[0]"],
    ];
    for (const [body, field] of cases) {
      const res = await w.owner.client.post(`${w.ws}/deals`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
  });

  test("a contact, company or pipeline of another workspace is 404", async () => {
    const foreignContact = await insertContact(w.other.workspaceId);
    const foreignCompany = (await w.other.owner.client.post(`${w.other.ws}/companies`, { name: "Theirs" }))
      .body.id;
    const foreignPipeline = (await w.other.owner.client.get(`${w.other.ws}/pipelines`)).body[0].id;
    for (const [body, error] of [
      [{ title: "x", contactId: foreignContact }, "Contact not found"],
      [{ title: "x", companyId: foreignCompany }, "Company not found"],
      [{ title: "x", pipelineId: foreignPipeline }, "Pipeline not found"],
      [{ title: "x", contactId: "missing" }, "Contact not found"],
    ] as const) {
      const res = await w.owner.client.post(`${w.ws}/deals`, body);
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 404, error });
    }
    const deal = (await w.owner.client.post(`${w.ws}/deals`, { title: "Mine" })).body;
    expect(
      (await w.owner.client.patch(`${w.ws}/deals/${deal.id}`, { companyId: foreignCompany })).status,
    ).toBe(404);
    expect((await w.other.owner.client.get(`${w.other.ws}/deals/${deal.id}`)).status).toBe(404);
    expect((await w.other.owner.client.patch(`${w.other.ws}/deals/${deal.id}`, { title: "x" })).status).toBe(
      404,
    );
    expect(
      (await w.other.owner.client.patch(`${w.other.ws}/deals/${deal.id}/stage`, { stageId: "x" })).status,
    ).toBe(404);
    expect((await w.other.owner.client.delete(`${w.other.ws}/deals/${deal.id}`)).status).toBe(404);
  });

  test("update changes fields, merges attributes, ignores stage and read-only fields", async () => {
    const deal = (
      await w.owner.client.post(`${w.ws}/deals`, {
        title: "Editable",
        attributes: { a: 1, b: 2 },
        pipelineId: partners.id,
      })
    ).body;
    const res = await w.member.client.patch(`${w.ws}/deals/${deal.id}`, {
      title: "Edited",
      value: 99.99,
      attributes: { a: null, c: 3 },
      tags: ["t1"],
      contactId,
      expectedCloseDate: "2027-01-15",
      stageId: partners.stages[2].id,
      status: "won",
      createdBy: "someone",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      title: "Edited",
      value: 99.99,
      attributes: { b: 2, c: 3 },
      tags: ["t1"],
      contactId,
      expectedCloseDate: "2027-01-15",
      stageId: partners.stages[0].id,
      status: "open",
      createdBy: w.owner.id,
    });
    const unlinked = await w.owner.client.patch(`${w.ws}/deals/${deal.id}`, {
      contactId: null,
      expectedCloseDate: null,
    });
    expect(unlinked.body).toMatchObject({ contactId: null, expectedCloseDate: null });
    expect((await w.owner.client.patch(`${w.ws}/deals/${deal.id}`, { value: -5 })).status).toBe(400);
    expect((await w.owner.client.patch(`${w.ws}/deals/missing`, { title: "x" })).status).toBe(404);
  });

  test("stage moves stay inside the pipeline, close and reopen the deal, and are recorded", async () => {
    const deal = (
      await w.owner.client.post(`${w.ws}/deals`, { title: "Mover", pipelineId: partners.id, value: 100 })
    ).body;
    const [first, second, won, lost] = partners.stages;
    const toDemo = await w.member.client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: second.id });
    expect(toDemo.status).toBe(200);
    expect(toDemo.body).toMatchObject({ stageId: second.id, status: "open", closedAt: null });

    const toWon = await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: won.id });
    expect(toWon.body).toMatchObject({ stageId: won.id, status: "won", closedAt: expect.any(String) });
    const toLost = await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, {
      stageId: lost.id,
      lostReason: "Budget",
    });
    expect(toLost.body).toMatchObject({ status: "lost", lostReason: "Budget", closedAt: expect.any(String) });
    const reopened = await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: first.id });
    expect(reopened.body).toMatchObject({ status: "open", closedAt: null });
    // Same stage again: no new history entry.
    const same = await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: first.id });
    expect(same.status).toBe(200);

    expect(
      same.body.stageHistory.map(
        (h: { fromStageId: string; toStageId: string; toStatus: string; changedBy: string }) => [
          h.fromStageId,
          h.toStageId,
          h.toStatus,
          h.changedBy,
        ],
      ),
    ).toEqual([
      [null, first.id, "open", w.owner.id],
      [first.id, second.id, "open", w.member.id],
      [second.id, won.id, "won", w.owner.id],
      [won.id, lost.id, "lost", w.owner.id],
      [lost.id, first.id, "open", w.owner.id],
    ]);

    const sales = (await w.owner.client.get(`${w.ws}/pipelines`)).body.find(
      (p: { isDefault: boolean }) => p.isDefault,
    );
    const outside = await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, {
      stageId: sales.stages[1].id,
    });
    expect(outside.status).toBe(400);
    expect(outside.body.details[0].field).toBe("stageId");
    expect((await w.owner.client.patch(`${w.ws}/deals/${deal.id}/stage`, {})).status).toBe(400);
    expect((await w.owner.client.patch(`${w.ws}/deals/missing/stage`, { stageId: first.id })).status).toBe(
      404,
    );
    const activity = await w.owner.client.get(`${w.ws}/audit-logs?action=deal.stage_changed`);
    expect(activity.body.data.filter((a: { targetId: string }) => a.targetId === deal.id)).toHaveLength(4);
  });

  test("list filters, searches, sorts and paginates", async () => {
    const p = await pipeline("Listing");
    const make = (title: string, extra: Record<string, unknown>) =>
      w.owner.client.post(`${w.ws}/deals`, { title, pipelineId: p.id, ...extra });
    await make("Alpha renewal", {
      value: 100,
      currency: "USD",
      tags: ["renewal"],
      expectedCloseDate: "2026-03-01",
    });
    await make("Beta expansion", { value: 500, currency: "USD", companyId, expectedCloseDate: "2026-06-01" });
    await make("Gamma new logo", {
      value: 250,
      currency: "EUR",
      stageId: p.stages[2].id,
      contactId,
      ownerId: w.member.id,
    });
    const all = await w.owner.client.get(`${w.ws}/deals?pipelineId=${p.id}&sort=-value`);
    expect(all.body.data.map((d: { title: string }) => d.title)).toEqual([
      "Beta expansion",
      "Gamma new logo",
      "Alpha renewal",
    ]);
    expect(all.body.pagination).toEqual({ page: 1, limit: 50, total: 3, totalPages: 1 });
    const paged = await w.owner.client.get(`${w.ws}/deals?pipelineId=${p.id}&sort=title&limit=1&page=3`);
    expect(paged.body.data.map((d: { title: string }) => d.title)).toEqual(["Gamma new logo"]);
    const q = (query: string) =>
      w.owner.client
        .get(`${w.ws}/deals?pipelineId=${p.id}&${query}`)
        .then((r) => r.body.data.map((d: { title: string }) => d.title));
    expect(await q("search=EXPANS")).toEqual(["Beta expansion"]);
    expect(await q("status=won")).toEqual(["Gamma new logo"]);
    expect(await q(`stageId=${p.stages[0].id}&sort=title`)).toEqual(["Alpha renewal", "Beta expansion"]);
    expect(await q("currency=eur")).toEqual(["Gamma new logo"]);
    expect(await q("minValue=200&maxValue=400")).toEqual(["Gamma new logo"]);
    expect(await q("tag=renewal")).toEqual(["Alpha renewal"]);
    expect(await q(`companyId=${companyId}`)).toEqual(["Beta expansion"]);
    expect(await q(`contactId=${contactId}`)).toEqual(["Gamma new logo"]);
    expect(await q(`ownerId=${w.member.id}`)).toEqual(["Gamma new logo"]);
    expect(await q("expectedCloseFrom=2026-05-01&expectedCloseTo=2026-12-31")).toEqual(["Beta expansion"]);
    // A deal without a date comes last going up and first going down (PostgreSQL's order of nulls).
    expect(await q("sort=expectedCloseDate")).toEqual(["Alpha renewal", "Beta expansion", "Gamma new logo"]);
    expect(await q("sort=-expectedCloseDate")).toEqual(["Gamma new logo", "Beta expansion", "Alpha renewal"]);
    const listed = await w.owner.client.get(`${w.ws}/deals?pipelineId=${p.id}&tag=renewal`);
    expect(listed.body.data[0]).toMatchObject({
      value: 100,
      expectedCloseDate: "2026-03-01",
      tags: ["renewal"],
    });
    for (const bad of [
      "status=maybe",
      "sort=secret",
      "minValue=abc",
      "expectedCloseFrom=tomorrow",
      "expectedCloseTo=2026-13-01",
    ]) {
      const res = await w.owner.client.get(`${w.ws}/deals?${bad}`);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
    }
  });

  test("stats give count and value per stage (per currency), totals and the win rate", async () => {
    const p = await pipeline("Stats");
    const [n, demo, won, lost] = p.stages;
    const make = (value: number, stageId: string, currency = "USD", ownerId?: string) =>
      w.owner.client.post(`${w.ws}/deals`, {
        title: `d${value}`,
        value,
        currency,
        pipelineId: p.id,
        stageId,
        ...(ownerId ? { ownerId } : {}),
      });
    await make(100, n.id);
    await make(50.25, n.id);
    await make(70, n.id, "EUR");
    await make(1000, demo.id, "USD", w.member.id);
    await make(300, won.id);
    await make(200, won.id);
    await make(10, lost.id);
    const res = await w.viewer.client.get(`${w.ws}/deals/stats?pipelineId=${p.id}`);
    expect(res.status).toBe(200);
    expect(res.body.pipelines).toHaveLength(1);
    const stages = res.body.pipelines[0].stages;
    expect(
      stages.map((s: { name: string; count: number; value: object }) => [s.name, s.count, s.value]),
    ).toEqual([
      ["New", 3, { USD: 150.25, EUR: 70 }],
      ["Demo", 1, { USD: 1000 }],
      ["Won", 2, { USD: 500 }],
      ["Lost", 1, { USD: 10 }],
    ]);
    expect(stages[1].weightedValue).toEqual({ USD: 400 });
    expect(res.body.totals).toEqual({
      open: { count: 4, value: { USD: 1150.25, EUR: 70 } },
      won: { count: 2, value: { USD: 500 } },
      lost: { count: 1, value: { USD: 10 } },
      all: { count: 7 },
    });
    expect(res.body.winRate).toBeCloseTo(0.67, 2);
    const mine = await w.readKey.get(`${w.ws}/deals/stats?pipelineId=${p.id}&ownerId=${w.member.id}`);
    expect(mine.body.totals.open).toEqual({ count: 1, value: { USD: 1000 } });
    expect(mine.body.winRate).toBeNull();
    const everything = await w.owner.client.get(`${w.ws}/deals/stats`);
    expect(everything.body.pipelines.length).toBeGreaterThan(1);
    expect((await w.owner.client.get(`${w.ws}/deals/stats?pipelineId=missing`)).status).toBe(404);
    expect((await w.owner.client.get(`${w.ws}/deals/stats?createdFrom=never`)).status).toBe(400);
    expect((await w.other.owner.client.get(`${w.other.ws}/deals/stats`)).body.totals.all).toEqual({
      count: 0,
    });
  });

  test("a deal outlives its contact and company: the links are cleared", async () => {
    const contact = await insertContact(w.workspaceId);
    const company = (await w.owner.client.post(`${w.ws}/companies`, { name: "Short-lived" })).body.id;
    const deal = (
      await w.owner.client.post(`${w.ws}/deals`, {
        title: "Survivor",
        contactId: contact,
        companyId: company,
      })
    ).body;
    const sequelize = await database();
    await sequelize.query(`DELETE FROM contacts WHERE id = :id`, { replacements: { id: contact } });
    await w.owner.client.delete(`${w.ws}/companies/${company}`);
    const after = await w.owner.client.get(`${w.ws}/deals/${deal.id}`);
    expect(after.body).toMatchObject({ id: deal.id, contactId: null, companyId: null });
  });

  test("a VIEWER and a contacts.read key can read but not write; delete removes the deal", async () => {
    const deal = (await w.owner.client.post(`${w.ws}/deals`, { title: "Guarded", pipelineId: partners.id }))
      .body;
    for (const client of [w.viewer.client, w.readKey]) {
      expect((await client.get(`${w.ws}/deals`)).status).toBe(200);
      expect((await client.get(`${w.ws}/deals/${deal.id}`)).status).toBe(200);
      expect((await client.post(`${w.ws}/deals`, { title: "No" })).status).toBe(403);
      expect((await client.patch(`${w.ws}/deals/${deal.id}`, { title: "No" })).status).toBe(403);
      expect(
        (await client.patch(`${w.ws}/deals/${deal.id}/stage`, { stageId: partners.stages[1].id })).status,
      ).toBe(403);
      expect((await client.delete(`${w.ws}/deals/${deal.id}`)).status).toBe(403);
    }
    const byKey = await w.fullKey.post(`${w.ws}/deals`, { title: "Keyed" });
    expect(byKey.status).toBe(201);
    expect(byKey.body).toMatchObject({ ownerId: null, createdBy: null });
    const removed = await w.member.client.delete(`${w.ws}/deals/${deal.id}`);
    expect(removed.body).toEqual({ success: true });
    expect((await w.owner.client.get(`${w.ws}/deals/${deal.id}`)).status).toBe(404);
    expect((await w.owner.client.delete(`${w.ws}/deals/${deal.id}`)).status).toBe(404);
  });
});

test("deleting a workspace removes its CRM records with it", async () => {
  const { owner, ws } = w.other;
  const company = (await owner.client.post(`${ws}/companies`, { name: "Gone Co" })).body;
  const deal = (await owner.client.post(`${ws}/deals`, { title: "Gone deal", companyId: company.id })).body;
  await owner.client.patch(`${ws}/deals/${deal.id}/stage`, {
    stageId: (await owner.client.get(`${ws}/pipelines`)).body[0].stages[1].id,
  });
  expect(
    (await owner.client.post(`${ws}/tasks`, { title: "Gone task", dealId: deal.id, assigneeId: owner.id }))
      .status,
  ).toBe(201);
  const res = await owner.client.delete(ws);
  expect(res.status).toBe(200);
  const sequelize = await database();
  for (const table of ["companies", "pipelines", "deals", "deal_stage_history", "tasks", "notifications"]) {
    const [rows] = await sequelize.query(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = :id`, {
      replacements: { id: w.other.workspaceId },
    });
    expect({ table, n: (rows as Array<{ n: number }>)[0].n }).toEqual({ table, n: 0 });
  }
});
