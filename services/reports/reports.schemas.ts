import { Type, type Static } from "@sinclair/typebox";
import { ANALYTICS_ENDPOINTS } from "../../lib/analytics";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";

/** Params and answers of the reports routes (contract-messaging 12). */

const Id = Type.String({ minLength: 1, maxLength: 64 });

/** How many addresses one schedule mails. */
export const MAX_RECIPIENTS = 50;

const reportFields = {
  name: Trimmed({ minLength: 1, maxLength: 200 }),
  endpoint: StringEnum(ANALYTICS_ENDPOINTS, {
    description: "The analytics answer the report runs (`overview` is `{ws}/analytics` itself)",
  }),
  params: Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: 50,
    description:
      "The answer's query as `{ws}/analytics/<endpoint>` takes it (`from`, `to`, `granularity`, `timezone`, `metric`, `steps`, `campaignId`, ...); checked against that route's parameters",
  }),
};

export const ReportSchema = Component(
  "Report",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    endpoint: Type.String(),
    params: Type.Record(Type.String(), Type.Unknown()),
    lastRunAt: Nullable(DateTime()),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type ReportView = Static<typeof ReportSchema>;

const scheduleFields = {
  cron: Trimmed({
    minLength: 1,
    maxLength: 100,
    description: "5 fields: minute, hour, day of month, month, day of week (`30 2 * * 1`)",
  }),
  timezone: Type.String({ minLength: 1, maxLength: 64, description: "IANA zone the cron is read in" }),
  recipients: Type.Array(Trimmed({ format: "email", maxLength: 254 }), {
    minItems: 1,
    maxItems: MAX_RECIPIENTS,
    description: "Addresses the report's CSV is mailed to",
  }),
  active: Type.Boolean({ default: true, description: "An inactive schedule keeps no next run" }),
};

export const ScheduleSchema = Component(
  "ReportSchedule",
  Type.Object({
    id: Type.String(),
    reportId: Type.String(),
    cron: Type.String(),
    timezone: Type.String(),
    recipients: Type.Array(Type.String()),
    active: Type.Boolean(),
    lastRunAt: Nullable(DateTime()),
    nextRunAt: Nullable(DateTime({ description: "When it is due next (null: inactive, or never again)" })),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type ScheduleView = Static<typeof ScheduleSchema>;

const JobAccepted = Type.Object({ jobId: Type.String({ description: "Follow it at `GET {ws}/jobs?id=`" }) });

export const schemas = {
  list: Params({ workspaceId: WorkspaceIdParam, ...PageQuery }),
  listResult: Paginated(ReportSchema),
  get: Params({ workspaceId: WorkspaceIdParam, reportId: Id }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    ...reportFields,
    params: Type.Optional(reportFields.params),
  }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    reportId: Id,
    name: Type.Optional(reportFields.name),
    endpoint: Type.Optional(reportFields.endpoint),
    params: Type.Optional(reportFields.params),
  }),
  runResult: Type.Object({
    ranAt: DateTime(),
    result: Type.Unknown({ description: "The analytics answer, as `{ws}/analytics/<endpoint>` gives it" }),
  }),
  success: Type.Object({ success: Type.Literal(true) }),
  exportDoc: {
    "200": {
      description:
        "CSV: a header row, then a row per item of the answer's main array (its first top-level array; the whole answer as one row when it has none), nested keys joined by `.`",
      content: { "text/csv": { schema: { type: "string" } } },
    },
  },

  listSchedules: Params({ workspaceId: WorkspaceIdParam, reportId: Type.Optional(Id) }),
  listSchedulesResult: Type.Array(ScheduleSchema),
  getSchedule: Params({ workspaceId: WorkspaceIdParam, scheduleId: Id }),
  createSchedule: Params({
    workspaceId: WorkspaceIdParam,
    reportId: Id,
    ...scheduleFields,
    active: Type.Optional(scheduleFields.active),
  }),
  updateSchedule: Params({
    workspaceId: WorkspaceIdParam,
    scheduleId: Id,
    cron: Type.Optional(scheduleFields.cron),
    timezone: Type.Optional(scheduleFields.timezone),
    recipients: Type.Optional(scheduleFields.recipients),
    active: Type.Optional(Type.Boolean()),
  }),
  jobAccepted: JobAccepted,
  runDue: Params({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }),
  runDueResult: Type.Object({
    claimed: Type.Integer(),
    /** The delivery jobs queued by this pass's claim. */
    jobIds: Type.Array(Type.String()),
    /** The queued delivery jobs this pass started (its own, or ones a claimer left). */
    started: Type.Array(Type.String()),
  }),
};

export type ReportInput = { name: string; endpoint: string; params: Record<string, unknown> };
export type ScheduleInput = { cron: string; timezone: string; recipients: string[]; active: boolean };
