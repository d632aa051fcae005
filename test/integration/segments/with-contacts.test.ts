import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** Membership is current as soon as a contact write has been answered (through the real contacts service). */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "jobs", "contacts", "segments", "scoring"],
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

const memberIds = async (segmentId: string) =>
  (await ctx.owner.client.get(`${ctx.ws}/segments/${segmentId}/members`)).body.data.map(
    (m: { id: string }) => m.id,
  );

test("create, update and delete of a contact move it in and out of dynamic segments", async () => {
  const seg = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "Pro plan",
    filter: { match: "all", conditions: [{ field: "attributes.plan", operator: "eq", value: "pro" }] },
  });
  expect(seg.status).toBe(201);

  const created = await ctx.owner.client.post(`${ctx.ws}/contacts`, {
    email: "pro@acme.test",
    attributes: { plan: "pro" },
  });
  expect(created.status).toBe(201);
  expect(await memberIds(seg.body.id)).toEqual([created.body.id]);

  const patched = await ctx.owner.client.patch(`${ctx.ws}/contacts/${created.body.id}`, {
    attributes: { plan: "free" },
  });
  expect(patched.status).toBe(200);
  expect(await memberIds(seg.body.id)).toEqual([]);

  await ctx.owner.client.patch(`${ctx.ws}/contacts/${created.body.id}`, { attributes: { plan: "pro" } });
  expect(await memberIds(seg.body.id)).toEqual([created.body.id]);

  expect((await ctx.owner.client.delete(`${ctx.ws}/contacts/${created.body.id}`)).status).toBe(200);
  expect(await memberIds(seg.body.id)).toEqual([]);
  expect((await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}`)).body.memberCount).toBe(0);
  const growth = await ctx.owner.client.get(`${ctx.ws}/segments/${seg.body.id}/growth?days=1`);
  expect(growth.body.series).toEqual([
    { date: new Date().toISOString().slice(0, 10), memberCount: 0, entered: 2, exited: 2 },
  ]);
});
