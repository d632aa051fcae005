import { Type, type TProperties } from "@sinclair/typebox";
import { ANALYTICS_ENDPOINTS } from "../../lib/analytics";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Int32,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";
import { AnalyticsAnswerSchema } from "../analytics/analytics.schemas";

/** Params and answers of every CRM action (they are also its OpenAPI description). */

const Id = Type.String({ minLength: 1, maxLength: 64 });
const OptionalId = Type.Optional(Id);
const NullableId = Type.Optional(Nullable(Id));
const OptionalText = (maxLength: number) => Type.Optional(Nullable(Trimmed({ maxLength })));
const Currency = Type.String({
  pattern: "^[A-Z]{3}$",
  transform: ["trim", "toUpperCase"],
  description: "An ISO 4217 code such as USD",
  errorMessage: { pattern: "must be an ISO 4217 code such as USD" },
});
const CalendarDate = Type.String({
  pattern: "^\\d{4}-\\d{2}-\\d{2}$",
  description: "A date as YYYY-MM-DD",
  errorMessage: { pattern: "must be a date as YYYY-MM-DD" },
});
const Tags = Type.Optional(Type.Array(Trimmed({ minLength: 1, maxLength: 100 }), { maxItems: 100 }));
const Attributes = Type.Optional(Type.Record(Type.String(), Type.Unknown()));
/** A time bound in a query: a date (midnight UTC) or a date-time. */
const Moment = Type.Optional(
  Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })]),
);
const Search = Type.Optional(Trimmed({ maxLength: 200 }));
const Sort = Type.Optional(Type.String({ maxLength: 50, description: "A field, `-field` for descending" }));
const list = { workspaceId: WorkspaceIdParam, ...PageQuery, search: Search, sort: Sort };
const one = <K extends string>(key: K) =>
  Params({ workspaceId: WorkspaceIdParam, [key]: Id } as { workspaceId: typeof WorkspaceIdParam } & Record<
    K,
    typeof Id
  >);

const Address = Type.Object(
  {
    street: OptionalText(200),
    city: OptionalText(100),
    region: OptionalText(100),
    postalCode: OptionalText(20),
    country: Type.Optional(
      Nullable(
        Type.String({
          pattern: "^[A-Z]{2}$",
          transform: ["trim", "toUpperCase"],
          description: "An ISO 3166-1 alpha-2 code such as DE",
          errorMessage: { pattern: "must be an ISO 3166-1 alpha-2 code such as DE" },
        }),
      ),
    ),
  },
  { additionalProperties: false },
);

const companyFields = {
  domain: OptionalText(255),
  website: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 500,
        format: "uri",
        pattern: "^https?://",
        errorMessage: { format: "must be an http(s) URL", pattern: "must be an http(s) URL" },
      }),
    ),
  ),
  industry: OptionalText(100),
  employeeCount: Type.Optional(Nullable(Int32({ minimum: 0, maximum: 10_000_000 }))),
  annualRevenue: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1e15 }))),
  currency: Type.Optional(Nullable(Currency)),
  phone: OptionalText(50),
  description: OptionalText(10_000),
  address: Type.Optional(Address),
  ownerId: NullableId,
  tags: Tags,
  attributes: Attributes,
};

const StageInput = Type.Object(
  {
    id: OptionalId,
    name: Trimmed({ minLength: 1, maxLength: 100 }),
    probability: Type.Optional(Nullable(Int32({ minimum: 0, maximum: 100 }))),
    won: Type.Optional(Type.Boolean()),
    lost: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const Stages = Type.Array(StageInput, { minItems: 1, maxItems: 50 });

const dealFields = {
  value: Type.Optional(Type.Number({ minimum: 0, maximum: 1e13 })),
  currency: Type.Optional(Currency),
  contactId: NullableId,
  companyId: NullableId,
  ownerId: NullableId,
  expectedCloseDate: Type.Optional(Nullable(CalendarDate)),
  lostReason: OptionalText(500),
  description: OptionalText(10_000),
  tags: Tags,
  attributes: Attributes,
};

export const TASK_TYPES = ["todo", "call", "email", "meeting", "follow_up", "deadline"] as const;
export const TASK_PRIORITIES = ["low", "normal", "high", "urgent"] as const;
const taskFields = {
  description: OptionalText(10_000),
  type: Type.Optional(StringEnum(TASK_TYPES)),
  priority: Type.Optional(StringEnum(TASK_PRIORITIES)),
  dueAt: Type.Optional(Nullable(Type.String({ format: "date-time" }))),
  assigneeId: NullableId,
  contactId: NullableId,
  companyId: NullableId,
  dealId: NullableId,
};

export const VIEW_RESOURCES = ["contacts", "companies", "deals", "tasks", "segments", "campaigns"] as const;
export const WIDGET_KINDS = ["metric", "timeseries", "table", "funnel"] as const;
/** What `{ws}/search` finds, each with the permission it needs (search.repo.ts). */
export const SEARCH_TYPES = [
  "contact",
  "company",
  "deal",
  "campaign",
  "template",
  "segment",
  "form",
] as const;

const Position = Type.Object(
  {
    x: Int32({ minimum: 0, maximum: 100 }),
    y: Int32({ minimum: 0, maximum: 1000 }),
    w: Int32({ minimum: 1, maximum: 12 }),
    h: Int32({ minimum: 1, maximum: 50 }),
  },
  { additionalProperties: false },
);
const widgetFields = {
  title: Trimmed({ minLength: 1, maxLength: 100 }),
  kind: StringEnum(WIDGET_KINDS),
  endpoint: StringEnum(ANALYTICS_ENDPOINTS, { description: "The analytics answer the widget shows" }),
  params: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      maxProperties: 50,
      description: "The analytics query (from, to, granularity, metric, ...)",
    }),
  ),
  position: Type.Optional(Position),
};
const viewFields = {
  filters: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: "The list's query parameters" }),
  ),
  sort: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
  columns: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100 })),
  shared: Type.Optional(Type.Boolean()),
};

export const schemas = {
  companies: {
    list: Params({
      ...list,
      industry: Type.Optional(Type.String({ maxLength: 100 })),
      ownerId: OptionalId,
      tag: Type.Optional(Type.String({ maxLength: 100 })),
      domain: Type.Optional(Type.String({ maxLength: 255 })),
      country: Type.Optional(Type.String({ maxLength: 2 })),
      createdFrom: Moment,
      createdTo: Moment,
    }),
    create: Params({
      workspaceId: WorkspaceIdParam,
      name: Trimmed({ minLength: 1, maxLength: 200 }),
      ...companyFields,
    }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      companyId: Id,
      name: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
      ...companyFields,
    }),
    remove: one("companyId"),
    existingIds: Params({ ids: Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 }) }),
  },
  pipelines: {
    list: Params({ workspaceId: WorkspaceIdParam }),
    get: one("pipelineId"),
    create: Params({
      workspaceId: WorkspaceIdParam,
      name: Trimmed({ minLength: 1, maxLength: 100 }),
      stages: Stages,
      isDefault: Type.Optional(Type.Boolean()),
    }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      pipelineId: Id,
      name: Type.Optional(Trimmed({ minLength: 1, maxLength: 100 })),
      stages: Type.Optional(Stages),
      isDefault: Type.Optional(
        Type.Literal(true, {
          description: "Can only be set to true (make another pipeline the default instead)",
          errorMessage: "can only be set to true (make another pipeline the default instead)",
        }),
      ),
    }),
    remove: one("pipelineId"),
  },
  deals: {
    list: Params({
      ...list,
      pipelineId: OptionalId,
      stageId: OptionalId,
      status: Type.Optional(StringEnum(["open", "won", "lost"])),
      ownerId: OptionalId,
      contactId: OptionalId,
      companyId: OptionalId,
      currency: Type.Optional(Currency),
      tag: Type.Optional(Type.String({ maxLength: 100 })),
      minValue: Type.Optional(Type.Number()),
      maxValue: Type.Optional(Type.Number()),
      expectedCloseFrom: Type.Optional(CalendarDate),
      expectedCloseTo: Type.Optional(CalendarDate),
      createdFrom: Moment,
      createdTo: Moment,
    }),
    get: one("dealId"),
    create: Params({
      workspaceId: WorkspaceIdParam,
      title: Trimmed({ minLength: 1, maxLength: 200 }),
      pipelineId: OptionalId,
      stageId: OptionalId,
      ...dealFields,
    }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      dealId: Id,
      title: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
      ...dealFields,
    }),
    moveStage: Params({
      workspaceId: WorkspaceIdParam,
      dealId: Id,
      stageId: Id,
      lostReason: OptionalText(500),
    }),
    remove: one("dealId"),
    stats: Params({
      workspaceId: WorkspaceIdParam,
      pipelineId: OptionalId,
      ownerId: OptionalId,
      createdFrom: Moment,
      createdTo: Moment,
    }),
  },
  tasks: {
    list: Params({
      ...list,
      status: Type.Optional(StringEnum(["open", "completed", "overdue"])),
      assigneeId: OptionalId,
      contactId: OptionalId,
      companyId: OptionalId,
      dealId: OptionalId,
      type: Type.Optional(StringEnum(TASK_TYPES)),
      priority: Type.Optional(StringEnum(TASK_PRIORITIES)),
      dueFrom: Moment,
      dueTo: Moment,
    }),
    get: one("taskId"),
    create: Params({
      workspaceId: WorkspaceIdParam,
      title: Trimmed({ minLength: 1, maxLength: 300 }),
      ...taskFields,
    }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      taskId: Id,
      title: Type.Optional(Trimmed({ minLength: 1, maxLength: 300 })),
      ...taskFields,
    }),
    complete: Params({ workspaceId: WorkspaceIdParam, taskId: Id, completed: Type.Optional(Type.Boolean()) }),
    remove: one("taskId"),
    createOnce: Params({
      workspaceId: WorkspaceIdParam,
      taskId: Id,
      title: Trimmed({ minLength: 1, maxLength: 300 }),
      ...taskFields,
    }),
  },
  notifications: {
    list: Params({
      workspaceId: WorkspaceIdParam,
      ...PageQuery,
      unread: Type.Optional(Type.Boolean()),
      type: Type.Optional(Type.String({ maxLength: 100 })),
    }),
    update: Params({ workspaceId: WorkspaceIdParam, notificationId: Id, read: Type.Boolean() }),
    remove: one("notificationId"),
    markAllRead: Params({ workspaceId: WorkspaceIdParam }),
    notifyMembers: Params({
      userIds: Type.Array(Id, { maxItems: 1000 }),
      type: Type.String({ minLength: 1, maxLength: 100 }),
      title: Type.String({ minLength: 1, maxLength: 300 }),
      body: Type.Optional(Type.String({ maxLength: 2000 })),
      data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      dedupeKey: Type.String({ minLength: 1, maxLength: 300 }),
    }),
  },
  savedViews: {
    list: Params({ workspaceId: WorkspaceIdParam, resource: Type.Optional(StringEnum(VIEW_RESOURCES)) }),
    create: Params({
      workspaceId: WorkspaceIdParam,
      name: Trimmed({ minLength: 1, maxLength: 100 }),
      resource: StringEnum(VIEW_RESOURCES),
      ...viewFields,
    }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      viewId: Id,
      name: Type.Optional(Trimmed({ minLength: 1, maxLength: 100 })),
      ...viewFields,
    }),
    remove: one("viewId"),
  },
  widgets: {
    list: Params({
      workspaceId: WorkspaceIdParam,
      data: Type.Optional(
        Type.Boolean({ description: "Add each widget's `result`, its analytics answer (or its `error`)" }),
      ),
    }),
    create: Params({ workspaceId: WorkspaceIdParam, ...widgetFields }),
    update: Params({
      workspaceId: WorkspaceIdParam,
      widgetId: Id,
      title: Type.Optional(widgetFields.title),
      kind: Type.Optional(widgetFields.kind),
      endpoint: Type.Optional(widgetFields.endpoint),
      params: widgetFields.params,
      position: widgetFields.position,
    }),
    remove: one("widgetId"),
  },
  search: Params({
    workspaceId: WorkspaceIdParam,
    q: Trimmed({ minLength: 2, maxLength: 200, description: "At least 2 characters" }),
    types: Type.Optional(
      Type.String({ maxLength: 200, description: `Comma separated: ${SEARCH_TYPES.join(", ")}` }),
    ),
  }),
  dueTasks: Params({}),
};

// ---------- answers ----------

const str = Type.String();
const nstr = Nullable(Type.String());
const obj = <T extends TProperties>(properties: T) => Type.Object(properties);
const Amounts = Type.Record(Type.String(), Type.Number(), {
  description: 'Money per ISO 4217 currency, e.g. {"USD": 1200.5}',
});

export const CompanySchema = Component(
  "Company",
  obj({
    id: str,
    name: str,
    domain: Nullable(Type.String({ description: "Lower-cased host name, unique in the workspace" })),
    website: nstr,
    industry: nstr,
    employeeCount: Nullable(Type.Integer()),
    annualRevenue: Nullable(Type.Number()),
    currency: Nullable(Type.String({ description: "ISO 4217" })),
    phone: nstr,
    description: nstr,
    address: Type.Object({
      street: Type.Optional(str),
      city: Type.Optional(str),
      region: Type.Optional(str),
      postalCode: Type.Optional(str),
      country: Type.Optional(Type.String({ description: "ISO 3166-1 alpha-2" })),
    }),
    ownerId: Nullable(Type.String({ description: "User id of a member" })),
    tags: Type.Array(str),
    attributes: Type.Record(Type.String(), Type.Unknown()),
    createdBy: nstr,
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

const StageSchema = obj({
  id: str,
  name: str,
  position: Type.Integer(),
  probability: Nullable(Type.Integer({ minimum: 0, maximum: 100 })),
  won: Type.Boolean(),
  lost: Type.Boolean(),
});
export const PipelineSchema = Component(
  "Pipeline",
  obj({
    id: str,
    name: str,
    isDefault: Type.Boolean(),
    stages: Type.Array(StageSchema),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

const dealAnswerFields = {
  id: str,
  title: str,
  value: Type.Number({ minimum: 0 }),
  currency: Type.String({ description: "ISO 4217" }),
  pipelineId: str,
  stageId: str,
  status: StringEnum(["open", "won", "lost"], {
    description: "Follows the stage: a won or lost stage closes the deal",
  }),
  contactId: nstr,
  companyId: nstr,
  ownerId: nstr,
  expectedCloseDate: Nullable(Type.String({ format: "date" })),
  closedAt: Nullable(DateTime()),
  lostReason: nstr,
  description: nstr,
  tags: Type.Array(str),
  attributes: Type.Record(Type.String(), Type.Unknown()),
  stageChangedAt: DateTime(),
  createdBy: nstr,
  createdAt: DateTime(),
  updatedAt: DateTime(),
};
export const DealSchema = Component("Deal", obj(dealAnswerFields));
export const DealWithHistorySchema = Component(
  "DealWithHistory",
  obj({
    ...dealAnswerFields,
    stageHistory: Type.Array(
      obj({
        id: str,
        fromStageId: nstr,
        toStageId: str,
        fromStatus: nstr,
        toStatus: str,
        changedBy: nstr,
        changedAt: DateTime(),
      }),
    ),
  }),
);
const Bucket = obj({ count: Type.Integer(), value: Amounts });
export const DealStatsSchema = obj({
  pipelines: Type.Array(
    obj({
      id: str,
      name: str,
      isDefault: Type.Boolean(),
      stages: Type.Array(
        Type.Intersect([StageSchema, obj({ count: Type.Integer(), value: Amounts, weightedValue: Amounts })]),
      ),
    }),
  ),
  totals: obj({ open: Bucket, won: Bucket, lost: Bucket, all: obj({ count: Type.Integer() }) }),
  winRate: Nullable(Type.Number({ description: "won / (won + lost)" })),
});

export const TaskSchema = Component(
  "Task",
  obj({
    id: str,
    title: str,
    description: nstr,
    type: Type.Unsafe<string>(StringEnum(TASK_TYPES)),
    priority: Type.Unsafe<string>(StringEnum(TASK_PRIORITIES)),
    status: StringEnum(["open", "completed"]),
    overdue: Type.Boolean(),
    dueAt: Nullable(DateTime()),
    assigneeId: nstr,
    contactId: nstr,
    companyId: nstr,
    dealId: nstr,
    completedAt: Nullable(DateTime()),
    completedBy: nstr,
    createdBy: nstr,
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const NotificationSchema = Component(
  "Notification",
  obj({
    id: str,
    type: Type.String({ description: "task.assigned, task.due" }),
    title: str,
    body: nstr,
    resource: Nullable(obj({ type: str, id: nstr })),
    data: Type.Record(Type.String(), Type.Unknown()),
    read: Type.Boolean(),
    readAt: Nullable(DateTime()),
    createdAt: DateTime(),
  }),
);

export const SavedViewSchema = Component(
  "SavedView",
  obj({
    id: str,
    name: str,
    resource: str,
    filters: Type.Record(Type.String(), Type.Unknown(), {
      description: "The list's query parameters, as the client uses them",
    }),
    sort: nstr,
    columns: Type.Array(str),
    shared: Type.Boolean(),
    ownerId: str,
    mine: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const WidgetSchema = Component(
  "DashboardWidget",
  obj({
    id: str,
    title: str,
    kind: Type.Unsafe<string>(StringEnum(WIDGET_KINDS)),
    endpoint: Type.Unsafe<string>(StringEnum(ANALYTICS_ENDPOINTS)),
    params: Type.Record(Type.String(), Type.Unknown()),
    position: Type.Unsafe<Record<string, number>>(
      obj({ x: Type.Integer(), y: Type.Integer(), w: Type.Integer(), h: Type.Integer() }),
    ),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

/** A listed widget; with `?data=true` its answer, `result`, or `error` when its params no longer make a valid query. */
export const ListedWidgetSchema = Component(
  "DashboardWidgetListed",
  Type.Intersect([
    WidgetSchema,
    obj({
      result: Type.Optional(Nullable(AnalyticsAnswerSchema)),
      error: Type.Optional(
        Nullable(
          obj({
            error: str,
            code: str,
            details: Type.Optional(Type.Array(obj({ field: str, message: str }))),
          }),
        ),
      ),
    }),
  ]),
);

export const SearchResultSchema = obj({
  results: Type.Array(
    obj({
      type: Type.Unsafe<string>(StringEnum(SEARCH_TYPES)),
      id: str,
      title: str,
      subtitle: nstr,
    }),
    { description: "At most 10 per type; within a type, prefix matches before substring matches" },
  ),
});

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

export const results = {
  companies: Paginated(CompanySchema),
  deals: Paginated(DealSchema),
  tasks: Paginated(TaskSchema),
  notifications: Type.Intersect([
    Paginated(NotificationSchema),
    Type.Object({ unreadCount: Type.Integer({ description: "The caller's unread notifications in all" }) }),
  ]),
  pipelines: Type.Array(PipelineSchema),
  views: Type.Array(SavedViewSchema),
  widgets: Type.Array(ListedWidgetSchema),
  markAllRead: Type.Object({ updated: Type.Integer() }),
};
