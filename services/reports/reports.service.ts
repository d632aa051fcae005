import { requires } from "../../lib/access";
import { actingUserId } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { BackgroundMixin } from "../../mixins/background";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { runAnswer } from "./answers";
import { csvStream } from "./csv";
import { reportInput, scheduleChanges, scheduleWrite } from "./definitions";
import { startDelivery, startQueuedDeliveries } from "./deliver";
import { nextRunAfter } from "./due-times";
import * as repo from "./reports.repo";
import { schemas, ReportSchema, ScheduleSchema } from "./reports.schemas";

const WS = "/workspaces/:workspaceId/reports";
const read = requires("analytics.read");
/** Writes and runs: analytics.read, and not a VIEWER (contract-messaging 1). */
const write = requires("analytics.read", { role: "MEMBER" });
const doc = (summary: string, description?: string) => ({ tags: ["Reports"], summary, description });

/** Schedules claimed per pass of the due step. */
const DUE_BATCH = 100;

/**
 * Saved reports (an analytics answer and its params), run on demand or as
 * CSV, and schedules that mail the CSV (contract-messaging 12).
 */
export default defineService({
  name: "reports",
  mixins: [DatabaseMixin, BackgroundMixin],
  settings: { rest: "/" },

  actions: {
    /** Reports, newest first. analytics.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      ...read,
      params: schemas.list,
      result: schemas.listResult,
      openapi: doc("List saved reports"),
      handler: (ctx) => repo.listReports(workspaceOf(ctx), pageRequest(ctx.params)),
    }),

    /** Save a report; its params are checked against the answer's route (400 naming `params.<field>`). Not a VIEWER. */
    create: defineAction({
      rest: `POST ${WS}`,
      ...write,
      params: schemas.create,
      status: 201,
      result: ReportSchema,
      openapi: doc("Save a report {name, endpoint, params}", "`endpoint` names an analytics answer"),
      handler(ctx) {
        const ws = workspaceOf(ctx);
        return repo.createReport(ws, reportInput(ctx.broker, ws, ctx.params), actingUserId(ctx));
      },
    }),

    /** One report. analytics.read. */
    get: defineAction({
      rest: `GET ${WS}/:reportId`,
      ...read,
      params: schemas.get,
      result: ReportSchema,
      openapi: doc("Get a report"),
      handler: async (ctx) => found(await repo.getReport(workspaceOf(ctx), ctx.params.reportId), "Report"),
    }),

    /** Change a report's name, endpoint or params (checked as a whole). Not a VIEWER. */
    update: defineAction({
      rest: `PATCH ${WS}/:reportId`,
      ...write,
      params: schemas.update,
      result: ReportSchema,
      openapi: doc("Change a report's name, endpoint or params"),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { reportId, name, endpoint, params } = ctx.params;
        const current = found(await repo.getReport(ws, reportId), "Report");
        // A new endpoint takes new params; params alone are read against the report's endpoint.
        const next = reportInput(ctx.broker, ws, {
          name: name ?? current.name,
          endpoint: endpoint ?? current.endpoint,
          params: params ?? (endpoint ? {} : current.params),
        });
        return found(await repo.updateReport(ws, reportId, next), "Report");
      },
    }),

    /** Delete a report and its schedules. Not a VIEWER. */
    remove: defineAction({
      rest: `DELETE ${WS}/:reportId`,
      ...write,
      params: schemas.get,
      result: schemas.success,
      openapi: doc("Delete a report and its schedules"),
      async handler(ctx) {
        if (!(await repo.deleteReport(workspaceOf(ctx), ctx.params.reportId))) throw notFound("Report");
        return { success: true as const };
      },
    }),

    /** Run the report now: 200 {ranAt, result}; sets its lastRunAt. Not a VIEWER. */
    run: defineAction({
      rest: `POST ${WS}/:reportId/run`,
      ...write,
      params: schemas.get,
      result: schemas.runResult,
      openapi: doc("Run a report now"),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const report = found(await repo.getReport(ws, ctx.params.reportId), "Report");
        const ranAt = new Date();
        const result = await runAnswer(ctx, ws, report.endpoint, report.params);
        await repo.markReportRun(ws, report.id, ranAt);
        return { ranAt: ranAt.toISOString(), result };
      },
    }),

    /** The report's answer as CSV, streamed. analytics.read. */
    exportCsv: defineAction({
      rest: `GET ${WS}/:reportId/export.csv`,
      ...read,
      params: schemas.get,
      openapi: { ...doc("A report's answer as CSV"), responses: schemas.exportDoc },
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const report = found(await repo.getReport(ws, ctx.params.reportId), "Report");
        const result = await runAnswer(ctx, ws, report.endpoint, report.params);
        ctx.meta.$responseType = "text/csv; charset=utf-8";
        ctx.meta.$responseHeaders = {
          "Content-Disposition": `attachment; filename="report-${report.id}.csv"`,
        };
        return csvStream(result);
      },
    }),

    /** Every schedule of the workspace (a bare list), optionally of one report. analytics.read. */
    listSchedules: defineAction({
      rest: `GET ${WS}/schedules`,
      ...read,
      params: schemas.listSchedules,
      result: schemas.listSchedulesResult,
      openapi: doc("List report schedules"),
      handler: (ctx) => repo.listSchedules(workspaceOf(ctx), ctx.params.reportId),
    }),

    /** Schedule a report: {reportId, cron (5 fields), timezone (IANA), recipients, active}. Not a VIEWER. */
    createSchedule: defineAction({
      rest: `POST ${WS}/schedules`,
      ...write,
      params: schemas.createSchedule,
      status: 201,
      result: ScheduleSchema,
      openapi: doc(
        "Schedule a report's CSV by mail",
        "The cron is read in `timezone`. A fixed time in a spring-forward gap runs once at the gap's end; a repeated one runs once, at its first occurrence; `*` and step schedules follow real time.",
      ),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { reportId, cron, timezone, recipients, active } = ctx.params;
        if (!(await repo.getReport(ws, reportId)))
          throw notFound("Report", { field: "reportId", message: "is not one of the workspace's" });
        const input = scheduleWrite({ cron, timezone, recipients, active: active ?? true }, new Date());
        return repo.createSchedule(ws, reportId, input);
      },
    }),

    /** One schedule. analytics.read. */
    getSchedule: defineAction({
      rest: `GET ${WS}/schedules/:scheduleId`,
      ...read,
      params: schemas.getSchedule,
      result: ScheduleSchema,
      openapi: doc("Get a report schedule"),
      handler: async (ctx) =>
        found(await repo.getSchedule(workspaceOf(ctx), ctx.params.scheduleId), "Schedule"),
    }),

    /** Change a schedule; its next run is worked out again from now. Not a VIEWER. */
    updateSchedule: defineAction({
      rest: `PATCH ${WS}/schedules/:scheduleId`,
      ...write,
      params: schemas.updateSchedule,
      result: ScheduleSchema,
      openapi: doc("Change a report schedule (its next run is worked out again)"),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { scheduleId, workspaceId: _ws, ...changes } = ctx.params;
        const current = found(await repo.getSchedule(ws, scheduleId), "Schedule");
        const input = scheduleWrite(scheduleChanges(current, changes), new Date());
        return found(await repo.updateSchedule(ws, scheduleId, input), "Schedule");
      },
    }),

    /** Delete a schedule. Not a VIEWER. */
    removeSchedule: defineAction({
      rest: `DELETE ${WS}/schedules/:scheduleId`,
      ...write,
      params: schemas.getSchedule,
      result: schemas.success,
      openapi: doc("Delete a report schedule"),
      async handler(ctx) {
        if (!(await repo.deleteSchedule(workspaceOf(ctx), ctx.params.scheduleId))) throw notFound("Schedule");
        return { success: true as const };
      },
    }),

    /** Deliver a schedule's report now, as a `reports.deliver` job: 202 {jobId}. Its next run stays. Not a VIEWER. */
    runSchedule: defineAction({
      rest: `POST ${WS}/schedules/:scheduleId/run`,
      ...write,
      params: schemas.getSchedule,
      status: 202,
      result: schemas.jobAccepted,
      openapi: doc("Deliver a schedule's report now (a reports.deliver job)"),
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const schedule = found(await repo.getSchedule(ws, ctx.params.scheduleId), "Schedule");
        const jobId = await startDelivery(this.broker, this.logger, {
          workspaceId: ws,
          scheduleId: schedule.id,
          reportId: schedule.reportId,
          recipients: schedule.recipients,
          createdBy: actingUserId(ctx),
        });
        return { jobId };
      },
    }),

    /**
     * Internal (timer, cron tick): claim the due schedules of every
     * workspace, each once across replicas, moving each to its next run with
     * its delivery job queued in the same transaction; then start the queued
     * deliveries (these, and any whose claimer died before starting them).
     */
    runDueSchedules: defineAction({
      params: schemas.runDue,
      result: schemas.runDueResult,
      async handler(ctx) {
        const now = new Date();
        const limit = ctx.params.limit ?? DUE_BATCH;
        const claimed = await repo.claimDueSchedules(now, limit, (s) =>
          nextRunAfter(s.cron, s.timezone, now),
        );
        const started = await startQueuedDeliveries(this.broker, this.logger, limit);
        return { claimed: claimed.length, jobIds: claimed.map((s) => s.jobId), started };
      },
    }),
  },
});
