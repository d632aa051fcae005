import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** Contact writes of every origin re-evaluate dynamic segments before answering. */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "contacts", "segments", "jobs"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test("create, update, consent, bulk and ingest keep dynamic segment membership current", async () => {
  const c = ctx.owner.client;
  const vip = await c.post(`${ctx.ws}/segments`, {
    name: "VIPs",
    type: "dynamic",
    filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "vip" }] },
  });
  expect(vip.status).toBe(201);
  const optedOut = await c.post(`${ctx.ws}/segments`, {
    name: "No email",
    type: "dynamic",
    filter: { match: "all", conditions: [{ field: "consent.email", operator: "eq", value: "opted_out" }] },
  });
  expect(optedOut.status).toBe(201);
  const members = async (segmentId: string) =>
    (await c.get(`${ctx.ws}/segments/${segmentId}/members`)).body.data
      .map((m: { email: string }) => m.email)
      .sort();

  const a = (await c.post(`${ctx.ws}/contacts`, { email: "a@seg.io", tags: ["vip"] })).body;
  expect(await members(vip.body.id)).toEqual(["a@seg.io"]);
  await c.patch(`${ctx.ws}/contacts/${a.id}`, { tags: [] });
  expect(await members(vip.body.id)).toEqual([]);

  await c.put(`${ctx.ws}/contacts/${a.id}/consent`, { channel: "email", status: "opted_out" });
  expect(await members(optedOut.body.id)).toEqual(["a@seg.io"]);

  const bulk = await c.post(`${ctx.ws}/contacts/bulk`, { action: "tag", ids: [a.id], value: "vip" });
  expect(bulk.body).toEqual({ affected: 1 });
  expect(await members(vip.body.id)).toEqual(["a@seg.io"]);

  const ingest = await c.post(`${ctx.ws}/contacts/ingest`, {
    contacts: [{ email: "b@seg.io", tags: ["vip"], emailOptOut: true }],
  });
  expect(ingest.body).toEqual({ created: 1, updated: 0, failed: [] });
  expect(await members(vip.body.id)).toEqual(["a@seg.io", "b@seg.io"]);
  expect(await members(optedOut.body.id)).toEqual(["a@seg.io", "b@seg.io"]);
});

test("segments gone after this node saw them (an outage): a contact write answers 503 instead of leaving memberships stale; back, the write re-evaluates", async () => {
  const c = ctx.owner.client;
  const vip = await c.post(`${ctx.ws}/segments`, {
    name: "Gold",
    type: "dynamic",
    filter: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "gold" }] },
  });
  const contact = (await c.post(`${ctx.ws}/contacts`, { email: "gone@seg.io" })).body;
  const members = async () =>
    (await c.get(`${ctx.ws}/segments/${vip.body.id}/members`)).body.data.map(
      (m: { email: string }) => m.email,
    );

  await app.broker.destroyService(app.broker.getLocalService("segments")!);
  const during = await c.patch(`${ctx.ws}/contacts/${contact.id}`, { tags: ["gold"] });
  expect(during.status).toBe(503);
  expect(during.body.code).toBe("SERVICE_UNAVAILABLE");

  const schema = (await import("../../../services/segments/segments.service")).default;
  app.broker.createService(schema as unknown as Parameters<typeof app.broker.createService>[0]);
  await app.broker.waitForServices(["segments"], 10_000);
  // The client's retry of the same write: stored already, and now the membership follows.
  expect((await c.patch(`${ctx.ws}/contacts/${contact.id}`, { tags: ["gold"] })).status).toBe(200);
  expect(await members()).toEqual(["gone@seg.io"]);
});
