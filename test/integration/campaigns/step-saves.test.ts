import { QueryTypes } from "sequelize";
import { database } from "../../../lib/database";
import { saveSteps, type EnrollmentRow } from "../../../services/campaigns/enrollments.repo";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/** A pass holds the saves of enrollments that stop at a wait for time or an end, and writes them together. */

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let campaignId: string;
const contactIds: string[] = [];

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces", "contacts", "segments", "campaigns"],
    env: { CAMPAIGN_POLL_MS: "3600000" },
  });
  ctx = await ownerWithWorkspace(app.baseUrl);
  const c = ctx.owner.client;
  const campaign = await c.post(`${ctx.ws}/campaigns`, {
    name: "Held saves",
    workflow: {
      nodes: [
        { id: "entry", type: "entry", config: {} },
        { id: "w", type: "wait", config: { duration: "P1D" } },
      ],
      edges: [{ from: "entry", to: "w" }],
    },
  });
  campaignId = campaign.body.id;
  expect((await c.post(`${ctx.ws}/campaigns/${campaignId}/execute`, {})).status).toBeLessThan(300);
  for (let i = 0; i < 5; i++) {
    const created = await c.post(`${ctx.ws}/contacts`, { email: `held-${i}@example.com` });
    contactIds.push(created.body.id);
    expect(
      (await c.post(`${ctx.ws}/campaigns/${campaignId}/enroll`, { contactId: created.body.id })).status,
    ).toBe(201);
  }
});
afterAll(() => app?.stop());

const enrollments = async () =>
  (await database()).query<EnrollmentRow>(
    `SELECT * FROM campaign_enrollments WHERE campaign_id = $1 ORDER BY contact_id`,
    { bind: [campaignId], type: QueryTypes.SELECT },
  );

const logsOf = async (enrollmentId: string) =>
  (
    await (
      await database()
    ).query<{ node_id: string; outcome: string }>(
      `SELECT node_id, outcome FROM campaign_logs WHERE enrollment_id = $1 ORDER BY id`,
      { bind: [enrollmentId], type: QueryTypes.SELECT },
    )
  ).map((l) => `${l.node_id}:${l.outcome}`);

test("one pass leaves every enrollment waiting at its wait, each with its steps' logs in order", async () => {
  // Each enroll woke the service's own drain too: whichever pass claimed an enrollment saves it.
  await app.broker.call("campaigns.processDue", {});
  await waitFor(
    async () => (await enrollments()).every((row) => row.status === "waiting"),
    5000,
    "every enrollment at its wait",
  );
  const rows = await enrollments();
  expect(rows).toHaveLength(5);
  for (const row of rows) {
    expect(row).toMatchObject({ status: "waiting", current_node_id: "w" });
    expect(row.waiting_until).toBeInstanceOf(Date);
    expect(await logsOf(row.id)).toEqual(["entry:ok", "w:ok"]);
  }
});

test("a held save of an enrollment that ended meanwhile keeps it ended and still records its log", async () => {
  const [ended, other] = await enrollments();
  await (
    await database()
  ).query(`UPDATE campaign_enrollments SET status = 'exited', exit_reason = 'goal' WHERE id = $1`, {
    bind: [ended.id],
  });
  const next = { status: "completed" as const, currentNodeId: "w", runAt: null, exitReason: "path_end" };
  await saveSteps([
    { e: ended, next, logs: [{ nodeId: "w", outcome: "ok", branch: null, detail: "late" }] },
    { e: other, next, logs: [{ nodeId: "w", outcome: "ok", branch: null, detail: "on time" }] },
  ]);
  const after = new Map((await enrollments()).map((r) => [r.id, r]));
  expect(after.get(ended.id)).toMatchObject({ status: "exited", exit_reason: "goal" });
  expect(after.get(other.id)).toMatchObject({ status: "completed", exit_reason: "path_end", run_at: null });
  expect(after.get(other.id)?.finished_at).toBeInstanceOf(Date);
  expect(await logsOf(ended.id)).toEqual(["entry:ok", "w:ok", "w:ok"]);
});
