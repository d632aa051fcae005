import { QueryTypes, type Transaction } from "sequelize";
import * as databaseModule from "../../../lib/database";
import { database } from "../../../lib/database";
import {
  claimDue,
  recordAttempts,
  type AttemptResult,
  type EndpointRoom,
} from "../../../services/webhooks/deliveries.repo";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/** The claim query alone: no webhooks service runs here, so nothing else claims. */
let app: TestApp;
let workspaceId: string;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces"] });
  workspaceId = (await ownerWithWorkspace(app.baseUrl)).workspaceId;
});
afterAll(async () => {
  await app.stop();
});

beforeEach(async () => {
  const sequelize = await database();
  await sequelize.query(`DELETE FROM webhook_endpoints`);
  await sequelize.query(
    `INSERT INTO webhook_endpoints (id, workspace_id, url, direction) SELECT id, :workspaceId, 'http://127.0.0.1:9/', 'OUTBOUND'
       FROM unnest(ARRAY['ep-a', 'ep-b', 'ep-c']) AS id`,
    { replacements: { workspaceId } },
  );
  // ep-a has a backlog of 20 rows older than everything else; ep-b and ep-c have 5 rows each.
  await sequelize.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, next_attempt_at, created_at)
     SELECT ep || '-' || lpad(g::text, 2, '0'), :workspaceId, ep, 'claim.test', 'OUTBOUND', '{}',
            now() - interval '1 minute' + n * interval '10 seconds' + g * interval '1 millisecond',
            now() - interval '1 minute' + n * interval '10 seconds' + g * interval '1 millisecond'
       FROM (VALUES ('ep-a', 1, 20), ('ep-b', 2, 5), ('ep-c', 3, 5)) AS e(ep, n, count), generate_series(1, count) g`,
    { replacements: { workspaceId } },
  );
});

const claim = (limit: number, caps: Partial<EndpointRoom> = {}) =>
  claimDue("node-test", limit, 30_000, { perEndpoint: 3, room: {}, ...caps });

test("endpoints take turns from their own oldest rows, at most their room each", async () => {
  // ep-a keeps 4 rows queued, so the second claim finds it with one row left.
  await (
    await database()
  ).query(`DELETE FROM webhook_delivery_queue WHERE endpoint_id = 'ep-a' AND delivery_id > 'ep-a-04'`);
  const rows = await claim(9);
  expect(rows.map((r) => r.id)).toEqual([
    "ep-a-01",
    "ep-b-01",
    "ep-c-01",
    "ep-a-02",
    "ep-b-02",
    "ep-c-02",
    "ep-a-03",
    "ep-b-03",
    "ep-c-03",
  ]);
  expect(new Set(rows.map((r) => r.claim_token)).size).toBe(1);
  expect(rows.every((r) => r.url === "http://127.0.0.1:9/")).toBe(true);
  // Claimed rows are not claimed again; the room given decides what each endpoint takes next.
  const next = await claim(9, { room: { "ep-a": 1, "ep-b": 2, "ep-c": 2 } });
  expect(next.map((r) => r.id)).toEqual(["ep-a-04", "ep-b-04", "ep-c-04", "ep-b-05", "ep-c-05"]);
});

test("each endpoint's rows are read apart: a backlog at the head of the queue hides no endpoint", async () => {
  // ep-a's 20 rows are older than every other row, and it has room: the others still take their turns.
  const rows = await claim(6);
  expect(rows.map((r) => r.id)).toEqual(["ep-a-01", "ep-b-01", "ep-c-01", "ep-a-02", "ep-b-02", "ep-c-02"]);
});

test("an endpoint without room is read past, so its backlog does not hide the others", async () => {
  // ep-a's 20 rows fill the head of the queue; with no room it is read past.
  const rows = await claim(6, { room: { "ep-a": 0 } });
  expect(rows.map((r) => r.id)).toEqual(["ep-b-01", "ep-c-01", "ep-b-02", "ep-c-02", "ep-b-03", "ep-c-03"]);
});

test("an endpoint with room for one (a failing one's probe) takes only that, without hiding the others", async () => {
  const rows = await claim(6, { room: { "ep-a": 1 } });
  expect(rows.map((r) => r.id).sort()).toEqual(
    ["ep-a-01", "ep-b-01", "ep-b-02", "ep-b-03", "ep-c-01", "ep-c-02"].sort(),
  );
});

test("rows locked by another claim in progress are skipped, never waited for", async () => {
  const sequelize = await database();
  await sequelize.transaction(async (transaction: Transaction) => {
    await sequelize.query(
      `SELECT delivery_id FROM webhook_delivery_queue WHERE delivery_id IN ('ep-b-01', 'ep-c-01') FOR UPDATE`,
      { type: QueryTypes.SELECT, transaction },
    );
    const rows = await claim(4, { room: { "ep-a": 0 } });
    expect(rows.map((r) => r.id)).not.toContain("ep-b-01");
    expect(rows.map((r) => r.id)).not.toContain("ep-c-01");
    expect(rows.length).toBeGreaterThan(0);
  });
});

test("a recorded attempt settles its delivery out of the queue or leaves it queued for its retry; a claim taken over records nothing", async () => {
  const sequelize = await database();
  const [delivered, retried, dead, takenOver] = await claim(4, { room: { "ep-a": 0, "ep-b": 4, "ep-c": 0 } });
  const retryAt = new Date(Date.now() + 60_000);
  const result = (row: typeof delivered, outcome: Partial<AttemptResult>): AttemptResult => ({
    id: row.id,
    token: row.claim_token,
    attempt: 1,
    success: false,
    statusCode: 500,
    responseBody: "no",
    error: "HTTP 500",
    durationMs: 3,
    nextAttemptAt: null,
    ...outcome,
  });
  // Another replica took the last one over once its lease ended.
  await sequelize.query(
    `UPDATE webhook_delivery_queue SET claim_token = 'other', claimed_by = 'node-other' WHERE delivery_id = :id`,
    {
      replacements: { id: takenOver.id },
    },
  );
  const recorded = await recordAttempts([
    result(delivered, { success: true, statusCode: 200, error: null }),
    result(retried, { nextAttemptAt: retryAt }),
    result(dead, {}),
    result(takenOver, { success: true, statusCode: 200, error: null }),
  ]);
  expect(recorded.sort()).toEqual([delivered.id, retried.id, dead.id].sort());
  const rows = await sequelize.query<{
    id: string;
    success: boolean;
    attempt: number;
    next_attempt_at: Date | null;
    claimed_by: string | null;
    queued_at: Date | null;
    claimed: boolean | null;
  }>(
    `SELECT d.id, d.success, d.attempt, d.next_attempt_at, d.claimed_by, q.next_attempt_at AS queued_at,
            q.claimed_until IS NOT NULL AS claimed
       FROM webhook_deliveries d LEFT JOIN webhook_delivery_queue q ON q.delivery_id = d.id
      WHERE d.id IN (:ids) ORDER BY d.id`,
    { type: QueryTypes.SELECT, replacements: { ids: [delivered.id, retried.id, dead.id, takenOver.id] } },
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  expect(byId.get(delivered.id)).toMatchObject({
    success: true,
    attempt: 1,
    next_attempt_at: null,
    queued_at: null,
  });
  expect(byId.get(delivered.id)!.claimed_by).toBe("node-test");
  expect(byId.get(dead.id)).toMatchObject({
    success: false,
    attempt: 1,
    next_attempt_at: null,
    queued_at: null,
  });
  expect(byId.get(retried.id)).toMatchObject({ success: false, attempt: 1, claimed: false });
  expect(byId.get(retried.id)!.queued_at!.getTime()).toBe(retryAt.getTime());
  expect(byId.get(retried.id)!.next_attempt_at!.getTime()).toBe(retryAt.getTime());
  expect(byId.get(takenOver.id)).toMatchObject({ success: false, attempt: 0, claimed: true });
});

/** How a plan (EXPLAIN's JSON) reads each table: its scan nodes' types and index names, by relation. */
function scans(
  node: Record<string, unknown>,
  found = new Map<string, Set<string>>(),
): Map<string, Set<string>> {
  const relation = node["Relation Name"];
  if (typeof relation === "string") {
    const seen = found.get(relation) ?? new Set<string>();
    seen.add(`${String(node["Node Type"])} ${String(node["Index Name"] ?? "")}`.trim());
    found.set(relation, seen);
  }
  for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) scans(child, found);
  return found;
}

test("the claim reads the queue through its index and each claimed delivery by its key, however long the history", async () => {
  const sequelize = await database();
  // ep-b's 3,000 delivered rows in the history, never queued.
  await sequelize.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event, direction, body, success, created_at)
     SELECT 'old-' || g, :workspaceId, 'ep-b', 'claim.test', 'OUTBOUND', '{}', true, now() - interval '1 hour'
       FROM generate_series(1, 3000) g`,
    { replacements: { workspaceId } },
  );
  await sequelize.query(`ANALYZE webhook_deliveries`);
  await sequelize.query(`ANALYZE webhook_delivery_queue`);
  const select = jest.spyOn(databaseModule, "queryAcrossWorkspaces");
  try {
    const rows = await claim(6);
    expect(rows.map((r) => r.id)).not.toContain(expect.stringMatching(/^old-/));
    const [sql, bind] = select.mock.calls[0];
    const [{ "QUERY PLAN": plan }] = await databaseModule.queryAcrossWorkspaces<{
      "QUERY PLAN": Array<{ Plan: Record<string, unknown> }>;
    }>(`EXPLAIN (FORMAT JSON) ${sql}`, bind);
    const read = scans(plan[0].Plan);
    expect([...read.get("webhook_delivery_queue")!]).toContain("Index Scan webhook_delivery_queue_idx");
    expect([...read.get("webhook_deliveries")!]).toEqual(["Index Scan webhook_deliveries_pkey"]);
  } finally {
    select.mockRestore();
  }
});
