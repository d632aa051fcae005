import { newId } from "../../../lib/crypto";
import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** The chain with the real segments and scoring services: its effects are visible as soon as POST answers. */
let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "segments", "scoring", "events", "webhooks"] });
  ctx = await ownerWithWorkspace(app.baseUrl);
});
afterAll(() => app.stop());

test("a scoring rule and an event segment see the event before POST {ws}/events answers", async () => {
  const contactId = newId();
  await (await database()).query(`INSERT INTO contacts (id, workspace_id, email) VALUES (:id, :ws, 'chain@example.test')`, {
    replacements: { id: contactId, ws: ctx.workspaceId },
  });
  const rule = await ctx.owner.client.post(`${ctx.ws}/scoring-rules`, { name: "buyers", eventType: "purchase", points: 10 });
  expect(rule.status).toBe(201);
  const segment = await ctx.owner.client.post(`${ctx.ws}/segments`, {
    name: "purchasers",
    type: "dynamic",
    filter: { match: "all", conditions: [{ event: "purchase", operator: "performed" }] },
  });
  expect(segment.status).toBe(201);
  expect(segment.body.memberCount).toBe(0);

  const posted = await ctx.owner.client.post(`${ctx.ws}/events`, { type: "purchase", contactId, metadata: { amount: 5 } });
  expect(posted.status).toBe(201);

  const scores = await ctx.owner.client.get(`${ctx.ws}/contacts/${contactId}/scores`);
  expect(scores.status).toBe(200);
  expect(scores.body.score).toBe(10);
  expect(scores.body.history[0]).toMatchObject({ points: 10, eventId: posted.body.id });
  const members = await ctx.owner.client.get(`${ctx.ws}/segments/${segment.body.id}/members`);
  expect(members.body.data.map((m: { id: string }) => m.id)).toEqual([contactId]);
});
