import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * A/B tests through the gateway against real PostgreSQL: a campaign's split
 * with its figures and significance, the test naming the winner itself,
 * a winner by hand, later contacts taking the winner, and `{ws}/abtests`
 * across campaigns and templates.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let templateId: string;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "segments", "templates", "messages", "campaigns"],
    env: { MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  await ctx.owner.client.patch(ctx.ws, { settings: { sender: { fromEmail: "news@acme.test" } } });
  templateId = (
    await ctx.owner.client.post(`${ctx.ws}/templates`, {
      name: "Offer",
      channel: "email",
      content: { subject: "Offer", html: "<p>Offer</p>" },
    })
  ).body.id;
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;

async function enrollAll(campaignId: string, count: number, prefix: string) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await c().post(`${ctx.ws}/contacts`, { email: `${prefix}${i}@ab.example.com` })).body.id);
  const batch = await c().post(`${ctx.ws}/campaigns/${campaignId}/batch`, { contactIds: ids });
  expect(batch.body).toMatchObject({ enrolled: count });
  return waitFor(async () => {
    const logs = (await c().get(`${ctx.ws}/campaigns/${campaignId}/logs?nodeId=split&limit=100`)).body
      .data as Array<{
      contactId: string;
      branch: string;
    }>;
    const mine = logs.filter((l) => ids.includes(l.contactId));
    const messages = (await c().get(`${ctx.ws}/messages?campaignId=${campaignId}&limit=100`)).body
      .data as Array<{
      contactId: string;
      status: string;
    }>;
    // Each contact's send exists and has gone (a split's log is saved before its send is queued).
    const sends = messages.filter((m) => ids.includes(m.contactId));
    return mine.length === count &&
      sends.length === count &&
      sends.every((m) => m.status !== "queued" && m.status !== "sending")
      ? mine
      : undefined;
  }, 15_000);
}

test("a split's figures and significance; the test names the winner; later contacts take it; a hand winner replaces it", async () => {
  const created = await c().post(`${ctx.ws}/campaigns`, {
    name: "Split",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        {
          id: "split",
          type: "ab_split",
          config: {
            variants: [
              { id: "A", weight: 50 },
              { id: "B", weight: 50 },
            ],
            metric: "open",
            autoWinner: { minSample: 10, confidence: 0.95 },
          },
        },
        { id: "sendA", type: "send", config: { channel: "email", templateId } },
        { id: "sendB", type: "send", config: { channel: "email", templateId } },
      ],
      edges: [
        { from: "entry", to: "split" },
        { from: "split", to: "sendA", branch: "A" },
        { from: "split", to: "sendB", branch: "B" },
      ],
    },
  });
  const id = created.body.id;
  await c().post(`${ctx.ws}/campaigns/${id}/execute`);
  const assigned = await enrollAll(id, 60, "first");
  const inA = assigned.filter((l) => l.branch === "A").map((l) => l.contactId);
  expect(inA.length).toBeGreaterThanOrEqual(10);
  expect(60 - inA.length).toBeGreaterThanOrEqual(10);
  // Everyone who got A opened; nobody who got B did.
  await (
    await database()
  ).query(
    `UPDATE messages SET opened_at = now(), status = 'opened' WHERE campaign_id = $1 AND contact_id = ANY ($2::text[])`,
    { bind: [id, inA] },
  );

  const [running] = (await c().get(`${ctx.ws}/campaigns/${id}/ab-tests`)).body;
  expect(running).toMatchObject({ nodeId: "split", metric: "open", status: "running", winner: null });
  const a = running.variants.find((v: { id: string }) => v.id === "A");
  const b = running.variants.find((v: { id: string }) => v.id === "B");
  expect(a).toMatchObject({
    weight: 50,
    enrolled: inA.length,
    sent: inA.length,
    opened: inA.length,
    rate: 1,
  });
  expect(b).toMatchObject({ enrolled: 60 - inA.length, sent: 60 - inA.length, opened: 0, rate: 0 });
  expect(running.significance).toMatchObject({ method: "two-proportion z-test", leader: "A", runnerUp: "B" });
  expect(running.significance.confidence).toBeGreaterThan(0.99);

  // This tick, or the runner's own minute, lets the test decide.
  await app.broker.call("campaigns.processDue", {});
  const [decided] = (await c().get(`${ctx.ws}/campaigns/${id}/ab-tests`)).body;
  expect(decided).toMatchObject({ status: "decided", winner: "A", decidedBy: "test" });
  const later = await enrollAll(id, 6, "later");
  expect(later.every((l) => l.branch === "A")).toBe(true);

  expect((await c().post(`${ctx.ws}/campaigns/${id}/ab-tests/split/winner`, { variant: "Z" })).status).toBe(
    400,
  );
  expect((await c().post(`${ctx.ws}/campaigns/${id}/ab-tests/nosuch/winner`, { variant: "A" })).status).toBe(
    404,
  );
  const byHand = await c().post(`${ctx.ws}/campaigns/${id}/ab-tests/split/winner`, { variant: "B" });
  expect(byHand.status).toBe(200);
  expect(byHand.body).toMatchObject({ status: "decided", winner: "B", decidedBy: "hand" });
  const last = await enrollAll(id, 3, "last");
  expect(last.every((l) => l.branch === "B")).toBe(true);
});

test("{ws}/abtests lists every test across campaigns and templates; POST starts a template's test (409 when it has one)", async () => {
  const res = await c().post(`${ctx.ws}/abtests`, {
    templateId,
    variants: [
      { id: "A", weight: 50, content: { subject: "Offer A" } },
      { id: "B", weight: 50, content: { subject: "Offer B" } },
    ],
    metric: "click",
  });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({
    kind: "template",
    templateId,
    campaignId: null,
    metric: "click",
    status: "running",
    winner: null,
    variants: [
      { id: "A", weight: 50, sent: 0 },
      { id: "B", weight: 50, sent: 0 },
    ],
  });
  expect((await c().post(`${ctx.ws}/abtests`, { templateId, variants: res.body.variants })).status).toBe(409);

  const all = (await c().get(`${ctx.ws}/abtests`)).body;
  expect(all.pagination.total).toBe(2);
  expect(all.data.map((t: { kind: string }) => t.kind).sort()).toEqual(["campaign", "template"]);
  const templates = (await c().get(`${ctx.ws}/abtests?kind=template`)).body.data;
  expect(templates).toHaveLength(1);
  expect(templates[0].significance.method).toBe("two-proportion z-test");
});
