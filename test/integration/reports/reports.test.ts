import { parse } from "csv-parse/sync";
import { database } from "../../../lib/database";
import type { BackgroundState } from "../../../mixins/background";
import { systemCall } from "../../../lib/system-call";
import { crmWorld, type CrmWorld } from "../crm/crm-fixtures";
import { nextRunAfter } from "../../../services/reports/due-times";
import { claimDueSchedules } from "../../../services/reports/reports.repo";
import { finishedJob } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";
import { asWorkspaceId } from "../../../lib/tenancy";

/**
 * Saved reports, their runs and CSV, and schedules that mail the CSV,
 * through the gateway. Events are seeded with past timestamps; the
 * workspace's zone is UTC, so each day below is a UTC day.
 */

let w: CrmWorld;

interface DuePass {
  claimed: number;
  jobIds: string[];
  started: string[];
}

const sql = async (text: string, bind: unknown[] = []) => (await database()).query(text, { bind });

const SERIES = {
  name: "Events per day",
  endpoint: "timeseries",
  params: { metric: "events", from: "2026-03-01", to: "2026-03-03", granularity: "day" },
};

beforeAll(async () => {
  w = await crmWorld({
    services: ["events", "analytics", "reports", "jobs", "messages", "contacts", "templates", "providers"],
  });
  const event = (type: string, timestamp: string) =>
    systemCall(w.app.broker, asWorkspaceId(w.workspaceId), "events.record", { type, timestamp });
  await event("page_view", "2026-03-01T10:00:00Z");
  await event("page_view", "2026-03-01T11:00:00Z");
  await event("signup", "2026-03-03T09:00:00Z");
  // Another workspace's facts never show.
  await systemCall(w.app.broker, asWorkspaceId(w.other.workspaceId), "events.record", {
    type: "page_view",
    timestamp: "2026-03-02T10:00:00Z",
  });
});
afterAll(() => w.app.stop());

const EXPECTED_POINTS = [
  { t: "2026-03-01T00:00:00.000Z", value: 2 },
  { t: "2026-03-02T00:00:00.000Z", value: 0 },
  { t: "2026-03-03T00:00:00.000Z", value: 1 },
];

describe("saved reports", () => {
  test("CRUD: created (201), listed newest first with pagination, read, changed, deleted", async () => {
    const first = await w.member.client.post(`${w.ws}/reports`, SERIES);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ ...SERIES, lastRunAt: null });
    const second = await w.owner.client.post(`${w.ws}/reports`, { name: "Overview", endpoint: "overview" });
    expect(second.status).toBe(201);
    expect(second.body.params).toEqual({});

    const page = await w.viewer.client.get(`${w.ws}/reports?limit=1`);
    expect(page.status).toBe(200);
    expect(page.body.data.map((r: { id: string }) => r.id)).toEqual([second.body.id]);
    expect(page.body.pagination).toMatchObject({ limit: 1, total: 2, totalPages: 2 });
    expect((await w.viewer.client.get(`${w.ws}/reports/${first.body.id}`)).body).toEqual(first.body);

    const renamed = await w.member.client.patch(`${w.ws}/reports/${second.body.id}`, {
      name: "Sends",
      endpoint: "deliverability",
      params: { channel: "email" },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      name: "Sends",
      endpoint: "deliverability",
      params: { channel: "email" },
    });

    expect((await w.member.client.delete(`${w.ws}/reports/${second.body.id}`)).body).toEqual({
      success: true,
    });
    expect((await w.member.client.get(`${w.ws}/reports/${second.body.id}`)).status).toBe(404);
    expect((await w.member.client.delete(`${w.ws}/reports/${second.body.id}`)).status).toBe(404);
    // Another workspace's report is not found.
    expect((await w.other.owner.client.get(`${w.other.ws}/reports/${first.body.id}`)).status).toBe(404);
    await w.member.client.delete(`${w.ws}/reports/${first.body.id}`);
  });

  test("an unknown endpoint or bad params: 400 naming the field", async () => {
    for (const [body, field] of [
      [{ ...SERIES, endpoint: "horoscope" }, "endpoint"],
      [{ ...SERIES, params: { ...SERIES.params, metric: "vibes" } }, "params.metric"],
      [{ ...SERIES, params: { ...SERIES.params, granularity: "fortnight" } }, "params.granularity"],
      [{ ...SERIES, params: { from: "2026-03-01" } }, "params.metric"],
      [{ name: "F", endpoint: "funnel", params: { steps: "a,b", windowDays: 0 } }, "params.windowDays"],
      [{ ...SERIES, name: "" }, "name"],
    ] as const) {
      const res = await w.owner.client.post(`${w.ws}/reports`, body);
      expect([res.status, res.body.details?.[0]?.field]).toEqual([400, field]);
    }
    const saved = await w.owner.client.post(`${w.ws}/reports`, SERIES);
    const bad = await w.owner.client.patch(`${w.ws}/reports/${saved.body.id}`, {
      params: { metric: "vibes" },
    });
    expect([bad.status, bad.body.details?.[0]?.field]).toEqual([400, "params.metric"]);
    // Unknown keys are dropped; text is read as the answer reads a query string.
    const funnel = await w.owner.client.post(`${w.ws}/reports`, {
      name: "Funnel",
      endpoint: "funnel",
      params: { steps: "page_view,signup", windowDays: "7", colour: "red" },
    });
    expect(funnel.status).toBe(201);
    expect(funnel.body.params).toEqual({ steps: "page_view,signup", windowDays: 7 });
  });

  test("run: 200 {ranAt, result} and lastRunAt; export.csv parses back to the result's rows", async () => {
    const report = (await w.member.client.post(`${w.ws}/reports`, SERIES)).body;
    const before = Date.now();
    const run = await w.member.client.post(`${w.ws}/reports/${report.id}/run`);
    expect(run.status).toBe(200);
    expect(run.body.result).toEqual({ metric: "events", points: EXPECTED_POINTS });
    expect(Date.parse(run.body.ranAt)).toBeGreaterThanOrEqual(before - 1000);
    expect((await w.viewer.client.get(`${w.ws}/reports/${report.id}`)).body.lastRunAt).toBe(run.body.ranAt);

    const csv = await w.viewer.client.get(`${w.ws}/reports/${report.id}/export.csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(parse(csv.text, { columns: true })).toEqual(
      EXPECTED_POINTS.map((p) => ({ t: p.t, value: String(p.value) })),
    );

    // An answer without an array is one row, nested keys joined by dots.
    const overview = (
      await w.member.client.post(`${w.ws}/reports`, {
        name: "O",
        endpoint: "overview",
        params: SERIES.params,
      })
    ).body;
    const rows = parse((await w.viewer.client.get(`${w.ws}/reports/${overview.id}/export.csv`)).text, {
      columns: true,
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ events: "3", "counts.sent": "0", "contacts.new": "0" });
  });

  test("a VIEWER reads and exports but may not write or run; an API key needs analytics.read", async () => {
    const report = (await w.member.client.post(`${w.ws}/reports`, SERIES)).body;
    expect((await w.viewer.client.post(`${w.ws}/reports`, SERIES)).status).toBe(403);
    expect((await w.viewer.client.patch(`${w.ws}/reports/${report.id}`, { name: "x" })).status).toBe(403);
    expect((await w.viewer.client.post(`${w.ws}/reports/${report.id}/run`)).status).toBe(403);
    expect((await w.viewer.client.delete(`${w.ws}/reports/${report.id}`)).status).toBe(403);
    expect(
      (
        await w.viewer.client.post(`${w.ws}/reports/schedules`, {
          reportId: report.id,
          cron: "0 8 * * *",
          timezone: "UTC",
          recipients: ["a@example.test"],
        })
      ).status,
    ).toBe(403);
    expect((await w.readKey.get(`${w.ws}/reports`)).status).toBe(403);
    expect((await w.fullKey.post(`${w.ws}/reports/${report.id}/run`)).status).toBe(200);
    expect((await w.other.owner.client.get(`${w.ws}/reports`)).status).toBe(403);
  });
});

describe("schedules", () => {
  let reportId: string;
  beforeAll(async () => {
    reportId = (await w.owner.client.post(`${w.ws}/reports`, SERIES)).body.id;
  });

  test("CRUD with next runs worked out in the zone; the list is a bare array", async () => {
    const created = await w.member.client.post(`${w.ws}/reports/schedules`, {
      reportId,
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      recipients: ["boss@example.test"],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ reportId, active: true, lastRunAt: null });
    // 02:30 in Berlin is 00:30 or 01:30 UTC.
    expect(created.body.nextRunAt).toMatch(/T0[01]:30:00\.000Z$/);
    expect(Date.parse(created.body.nextRunAt)).toBeGreaterThan(Date.now());

    const list = await w.viewer.client.get(`${w.ws}/reports/schedules`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([created.body]);
    expect((await w.viewer.client.get(`${w.ws}/reports/schedules/${created.body.id}`)).body).toEqual(
      created.body,
    );

    const paused = await w.member.client.patch(`${w.ws}/reports/schedules/${created.body.id}`, {
      active: false,
    });
    expect(paused.body).toMatchObject({ active: false, nextRunAt: null });
    const kolkata = await w.member.client.patch(`${w.ws}/reports/schedules/${created.body.id}`, {
      active: true,
      timezone: "Asia/Kolkata",
    });
    // 02:30 in Kolkata is 21:00 UTC.
    expect(kolkata.body.nextRunAt).toMatch(/T21:00:00\.000Z$/);

    expect((await w.member.client.delete(`${w.ws}/reports/schedules/${created.body.id}`)).body).toEqual({
      success: true,
    });
    expect((await w.member.client.get(`${w.ws}/reports/schedules/${created.body.id}`)).status).toBe(404);
  });

  test("bad cron, zone, recipients or report: 400 naming the field (404 for another workspace's report)", async () => {
    const good = { reportId, cron: "0 8 * * 1", timezone: "UTC", recipients: ["a@example.test"] };
    for (const [body, field] of [
      [{ ...good, cron: "0 8 * * 1 2026" }, "cron"],
      [{ ...good, cron: "0 25 * * *" }, "cron"],
      [{ ...good, cron: "0 0 30 2 *" }, "cron"],
      [{ ...good, timezone: "Mars/Olympus" }, "timezone"],
      [{ ...good, recipients: [] }, "recipients"],
      [{ ...good, recipients: ["not an address"] }, "recipients[0]"],
    ] as const) {
      const res = await w.member.client.post(`${w.ws}/reports/schedules`, body);
      expect([res.status, res.body.details?.[0]?.field]).toEqual([400, field]);
    }
    const otherReport = (await w.other.owner.client.post(`${w.other.ws}/reports`, SERIES)).body.id;
    const foreign = await w.member.client.post(`${w.ws}/reports/schedules`, {
      ...good,
      reportId: otherReport,
    });
    expect(foreign.status).toBe(404);
    const saved = (await w.member.client.post(`${w.ws}/reports/schedules`, good)).body;
    const bad = await w.member.client.patch(`${w.ws}/reports/schedules/${saved.id}`, { cron: "every day" });
    expect([bad.status, bad.body.details?.[0]?.field]).toEqual([400, "cron"]);
    await w.member.client.delete(`${w.ws}/reports/schedules/${saved.id}`);
  });

  test("run: 202 {jobId}; the reports.deliver job mails the CSV to every recipient through the send path", async () => {
    const schedule = (
      await w.member.client.post(`${w.ws}/reports/schedules`, {
        reportId,
        cron: "0 8 * * *",
        timezone: "UTC",
        recipients: ["boss@example.test", "ops@example.test"],
      })
    ).body;
    // A name is the user's words: neither Liquid nor markup in the mail.
    const name = 'Events per day {{ "x" }} <b>';
    await w.member.client.patch(`${w.ws}/reports/${reportId}`, { name });
    const run = await w.member.client.post(`${w.ws}/reports/schedules/${schedule.id}/run`);
    expect(run.status).toBe(202);
    const job = await finishedJob(w.owner.client, w.ws, run.body.jobId);
    expect(job).toMatchObject({
      type: "reports.deliver",
      status: "completed",
      progress: { done: 3, total: 3 },
      result: { reportId, scheduleId: schedule.id, rows: 3 },
    });
    expect(job.result.messages.map((m: { to: string; error: null }) => [m.to, m.error])).toEqual([
      ["boss@example.test", null],
      ["ops@example.test", null],
    ]);
    // The `log` provider sends them; each carries the CSV.
    for (const { messageId } of job.result.messages) {
      const message = await waitForSent(messageId);
      expect(message).toMatchObject({
        channel: "email",
        status: "sent",
        providerType: "log",
        transactional: true,
      });
      expect(message.content.subject).toBe(`Report: ${name}`);
      expect(message.content.text).toMatch(
        /^Events per day \{\{ "x" \}\} <b>, run at .*: 3 rows in report-.*\.csv\.$/,
      );
      expect(message.content.html).toContain("<p>Events per day {{ &#34;x&#34; }} &lt;b&gt;, run at");
      const [file] = message.content.attachments;
      expect(file).toMatchObject({ filename: `report-${reportId}.csv`, contentType: "text/csv" });
      expect(parse(Buffer.from(file.content, "base64").toString("utf8"), { columns: true })).toEqual(
        EXPECTED_POINTS.map((p) => ({ t: p.t, value: String(p.value) })),
      );
    }
    const after = (await w.member.client.get(`${w.ws}/reports/schedules/${schedule.id}`)).body;
    expect(after.lastRunAt).not.toBeNull();
    // A run on demand leaves the next due time where it was.
    expect(after.nextRunAt).toBe(schedule.nextRunAt);
  });

  test("a due schedule is claimed once across concurrent passes, moved to its next run, and delivered once", async () => {
    const schedule = (
      await w.member.client.post(`${w.ws}/reports/schedules`, {
        reportId,
        cron: "*/5 * * * *",
        timezone: "America/New_York",
        recipients: ["due@example.test"],
      })
    ).body;
    // Any claim of it comes after this moment (its own timer's included).
    const claimedFrom = Date.now();
    await sql(`UPDATE report_schedules SET next_run_at = now() - interval '1 minute' WHERE id = $1`, [
      schedule.id,
    ]);
    const passes = await Promise.all(
      Array.from({ length: 4 }, () => w.app.broker.call("reports.runDueSchedules") as Promise<DuePass>),
    );
    const jobIds = passes.flatMap((p) => p.jobIds);
    // The service's own timer may have taken it first; then none of these did.
    const jobs = (await w.owner.client.get(`${w.ws}/jobs?type=reports.deliver&limit=100`)).body.data.filter(
      (j: { result: { scheduleId?: string } | null; id: string }) =>
        jobIds.includes(j.id) || j.result?.scheduleId === schedule.id,
    );
    expect(jobIds.length).toBeLessThanOrEqual(1);
    const deliveries = await Promise.all(
      [...new Set([...jobIds, ...jobs.map((j: { id: string }) => j.id)])].map((id) =>
        finishedJob(w.owner.client, w.ws, id),
      ),
    );
    expect(deliveries.filter((j) => j.result?.scheduleId === schedule.id)).toHaveLength(1);
    const after = (await w.member.client.get(`${w.ws}/reports/schedules/${schedule.id}`)).body;
    // Later than its claim (the clock may have reached that next run since, at a 5-minute edge).
    expect(Date.parse(after.nextRunAt)).toBeGreaterThan(claimedFrom);
    expect(new Date(after.nextRunAt).getUTCMinutes() % 5).toBe(0);
    // Nothing is due now: a further pass claims nothing of it.
    const again = (await w.app.broker.call("reports.runDueSchedules")) as DuePass;
    expect(again.jobIds).toEqual([]);
    // Whichever pass claimed it, the due run has exactly one job.
    expect(await deliveryJobsOf(schedule.id)).toHaveLength(1);
  });

  test("a run claimed by a process that stops before starting its job is delivered by the next pass", async () => {
    const schedule = (
      await w.member.client.post(`${w.ws}/reports/schedules`, {
        reportId,
        cron: "0 * * * *",
        timezone: "UTC",
        recipients: ["claimed@example.test"],
      })
    ).body;
    // The service's own timer stops here: the pass below is the one that finds the claimed job.
    const reports = w.app.broker.getLocalService("reports") as unknown as BackgroundState;
    await Promise.all(
      reports.timerSteps.filter((p) => p.name === "reports.runDueSchedules").map((p) => p.stop()),
    );
    // Due in an hour, claimed as if it were two hours from now.
    await sql(`UPDATE report_schedules SET next_run_at = now() + interval '1 hour' WHERE id = $1`, [
      schedule.id,
    ]);
    const later = new Date(Date.now() + 2 * 3600_000);
    // The claim alone, as a process that dies right after it commits.
    const claimed = await claimDueSchedules(later, 1000, (s) => nextRunAfter(s.cron, s.timezone, later));
    const claim = claimed.find((c) => c.id === schedule.id);
    expect(claim).toBeDefined();
    const [queued] = await deliveryJobsOf(schedule.id);
    expect(queued).toMatchObject({ id: claim!.jobId, status: "queued" });
    // The next pass (any replica's timer, or the cron tick) starts it.
    const pass = (await w.app.broker.call("reports.runDueSchedules")) as DuePass;
    expect(pass.started).toContain(claim!.jobId);
    const job = await finishedJob(w.owner.client, w.ws, claim!.jobId);
    expect(job).toMatchObject({ status: "completed", result: { scheduleId: schedule.id, reportId } });
    expect(job.result.messages.map((m: { to: string }) => m.to)).toEqual(["claimed@example.test"]);
    // Started once: a further pass finds nothing queued of it.
    const again = (await w.app.broker.call("reports.runDueSchedules")) as DuePass;
    expect(again.started).not.toContain(claim!.jobId);
    expect(await deliveryJobsOf(schedule.id)).toHaveLength(1);
  });
});

async function deliveryJobsOf(scheduleId: string) {
  const [rows] = await sql(
    `SELECT id, status FROM jobs WHERE type = 'reports.deliver' AND input->>'scheduleId' = $1`,
    [scheduleId],
  );
  return rows as Array<{ id: string; status: string }>;
}

async function waitForSent(messageId: string) {
  return waitFor(
    async () => {
      const res = await w.owner.client.get(`${w.ws}/messages/${messageId}`);
      return res.body.status === "sent" ? res.body : undefined;
    },
    10_000,
    `message ${messageId} sent`,
  );
}
