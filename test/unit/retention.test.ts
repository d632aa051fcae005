import { purgeStatements, retentionPolicy, retentionPurge, RetentionSetting } from "../../lib/retention";
import { compileParamsChecker } from "../../lib/schema";
import { cutoffsOf } from "../../services/retention/purge";
import { asWorkspaceId } from "../../lib/tenancy";

const NOW = new Date("2026-03-29T12:00:00.000Z");

test("each kind's cutoff is now minus its days; a kept kind has none", () => {
  expect(cutoffsOf({ events: 30, messages: 1, formSubmissions: null, webhookDeliveries: 3650 }, NOW)).toEqual(
    {
      events: new Date("2026-02-27T12:00:00.000Z"),
      messages: new Date("2026-03-28T12:00:00.000Z"),
      formSubmissions: null,
      // Days are 24 hours, whatever a zone's clocks do (the 2026-03-29 change in Europe is not a shorter day here).
      webhookDeliveries: new Date(NOW.getTime() - 3650 * 24 * 60 * 60 * 1000),
    },
  );
});

test("a policy names every kind: left out or missing is kept (null)", () => {
  expect(retentionPolicy({ events: 7 })).toEqual({
    events: 7,
    messages: null,
    formSubmissions: null,
    webhookDeliveries: null,
  });
  expect(retentionPolicy(null)).toEqual({
    events: null,
    messages: null,
    formSubmissions: null,
    webhookDeliveries: null,
  });
});

test("settings.retention: days 1-3650 or null, and no other key", () => {
  const check = compileParamsChecker(RetentionSetting);
  expect(check({ events: 1, messages: 3650, formSubmissions: null }, true)).toBe(true);
  expect(check({}, true)).toBe(true);
  for (const [value, field] of [
    [{ events: 0 }, "events"],
    [{ messages: 3651 }, "messages"],
    [{ formSubmissions: 2.5 }, "formSubmissions"],
    [{ webhookDeliveries: -1 }, "webhookDeliveries"],
    [{ contacts: 30 }, "contacts"],
  ] as const) {
    const issues = check({ ...value }, true);
    expect(issues).not.toBe(true);
    expect((issues as Array<{ field: string }>).map((i) => i.field)).toContain(field);
  }
});

const oneLine = (sql: string) => sql.replace(/\s+/g, " ").trim();

test("a purge counts, and deletes oldest first by ctid, the workspace's rows before the cutoff", () => {
  const sql = purgeStatements({ table: "events", timeColumn: "timestamp" });
  expect(oneLine(sql.count)).toBe(
    "SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND timestamp < $2",
  );
  expect(oneLine(sql.purge)).toBe(
    "WITH gone AS ( DELETE FROM events" +
      " WHERE ctid = ANY(ARRAY(SELECT ctid FROM events WHERE workspace_id = $1 AND timestamp < $2" +
      " AND timestamp >= COALESCE($4::timestamptz, '-infinity') ORDER BY timestamp LIMIT $3))" +
      " AND workspace_id = $1 AND timestamp < $2 RETURNING timestamp AS at) SELECT count(*)::int AS n, max(at) AS last FROM gone",
  );
});

test("rows matching `keep` are neither counted nor deleted, the condition restated in the delete", () => {
  const sql = purgeStatements({ table: "messages", timeColumn: "created_at", keep: "status IN ('queued')" });
  const purgeable = "workspace_id = $1 AND created_at < $2 AND NOT (status IN ('queued'))";
  expect(oneLine(sql.count)).toBe(`SELECT count(*)::int AS n FROM messages WHERE ${purgeable}`);
  expect(oneLine(sql.purge)).toContain(
    `SELECT ctid FROM messages WHERE ${purgeable} AND created_at >= COALESCE($4::timestamptz, '-infinity') ORDER BY created_at LIMIT $3)) AND ${purgeable} RETURNING created_at AS at`,
  );
});

test("the table and time column must be plain identifiers", () => {
  for (const [table, timeColumn] of [
    ["events; DROP TABLE events", "timestamp"],
    ['"events"', "timestamp"],
    ["public.events", "timestamp"],
    ["Events", "timestamp"],
    ["", "timestamp"],
    ["events", "created_at DESC"],
    ["events", "1created"],
  ]) {
    expect(() => purgeStatements({ table, timeColumn })).toThrow(/Not a plain SQL identifier/);
  }
  expect(() => purgeStatements({ table: "webhook_deliveries", timeColumn: "created_at" })).not.toThrow();
});

test("count and delete run through the repo's query function with the workspace, cutoff, limit and start bound", async () => {
  const calls: Array<[string, unknown[]]> = [];
  const purge = retentionPurge(
    { table: "form_submissions", timeColumn: "created_at" },
    async (workspaceId, sql, bind) => {
      calls.push([sql, [workspaceId, ...bind]]);
      return [{ n: calls.length * 10, last: calls.length > 1 ? last : undefined }];
    },
  );
  const before = new Date("2026-01-01T00:00:00.000Z");
  const from = new Date("2025-06-01T00:00:00.000Z");
  const last = new Date("2025-06-02T00:00:00.000Z");
  expect(await purge.countBefore(asWorkspaceId("ws1"), before)).toBe(10);
  expect(await purge.deleteBefore(asWorkspaceId("ws1"), before, 500, from)).toEqual({ deleted: 20, last });
  expect(calls.map(([sql, bind]) => [sql.trim().split(/\s+/)[0], bind])).toEqual([
    ["SELECT", ["ws1", before]],
    ["WITH", ["ws1", before, 500, from]],
  ]);
});
