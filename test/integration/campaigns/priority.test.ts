import { database } from "../../../lib/database";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/**
 * Priority across campaigns under the workspace's frequency cap: when
 * several campaigns would send to one contact at once inside the cap, the
 * highest-priority one takes the slot; the others' steps skip (the message
 * recorded suppressed) or wait for the cap, as their send node says.
 */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "templates", "messages", "campaigns"],
    env: { MESSAGE_POLL_MS: "50", CAMPAIGN_POLL_MS: "50" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  await ctx.owner.client.patch(ctx.ws, {
    settings: { sender: { fromEmail: "news@acme.test" }, frequencyCap: { count: 1, periodHours: 24 } },
  });
});

afterAll(async () => {
  await app?.stop();
});

const c = () => ctx.owner.client;

async function campaign(name: string, priority: number, onFrequencyCap: "skip" | "wait", templateId: string) {
  const created = await c().post(`${ctx.ws}/campaigns`, {
    name,
    priority,
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "send", type: "send", config: { channel: "email", templateId, onFrequencyCap } },
      ],
      edges: [{ from: "entry", to: "send" }],
    },
  });
  expect(created.status).toBe(201);
  const active = await c().post(`${ctx.ws}/campaigns/${created.body.id}/execute`);
  return active.body as { id: string; publishedVersion: number };
}

test("the higher-priority campaign takes the cap's slot; a lower one skips or waits as configured", async () => {
  const templateId = (
    await c().post(`${ctx.ws}/templates`, {
      name: "Capped",
      channel: "email",
      content: { subject: "Hi", html: "<p>Hi</p>" },
    })
  ).body.id;
  const low = await campaign("Low", 0, "wait", templateId);
  const high = await campaign("High", 10, "skip", templateId);
  const lowest = await campaign("Lowest", -5, "skip", templateId);
  const who = (await c().post(`${ctx.ws}/contacts`, { email: "capped@example.com" })).body.id;

  // All three enrolled by one statement, so one pass of the runner meets them together.
  await (
    await database()
  ).query(
    `INSERT INTO campaign_enrollments (id, workspace_id, campaign_id, contact_id, version, status, run_at)
     SELECT gen_random_uuid()::text, $1, x.id, $2, 1, 'active', now() FROM unnest($3::text[]) AS x(id)`,
    { bind: [ctx.workspaceId, who, [low.id, lowest.id, high.id]] },
  );

  const enrollmentOf = async (campaignId: string) =>
    (await c().get(`${ctx.ws}/campaigns/${campaignId}/enrollments`)).body.data[0];
  const [highDone, lowWaiting, lowestDone] = await waitFor(async () => {
    const all = await Promise.all([high.id, low.id, lowest.id].map(enrollmentOf));
    return all[0].status === "completed" && all[1].status === "waiting" && all[2].status === "completed"
      ? all
      : undefined;
  }, 10_000);
  expect(highDone.currentNodeId).toBe("send");
  expect(lowWaiting.currentNodeId).toBe("send");
  expect(new Date(lowWaiting.waitingUntil).getTime() - Date.now()).toBeGreaterThan(23 * 3_600_000);
  expect(lowestDone.currentNodeId).toBe("send");

  const byCampaign = async (campaignId: string) =>
    (await c().get(`${ctx.ws}/messages?campaignId=${campaignId}`)).body.data as Array<
      Record<string, unknown>
    >;
  expect((await byCampaign(high.id)).map((m) => m.status)).not.toContain("suppressed");
  expect(await byCampaign(high.id)).toHaveLength(1);
  expect(await byCampaign(low.id)).toEqual([]);
  expect((await byCampaign(lowest.id)).map((m) => [m.status, m.reason])).toEqual([
    ["suppressed", "frequency_cap"],
  ]);
  const [held] = (await c().get(`${ctx.ws}/campaigns/${low.id}/logs?nodeId=send`)).body.data;
  expect(held).toMatchObject({
    outcome: "skipped",
    detail: expect.stringMatching(/^the frequency cap holds the send until /),
  });
});
